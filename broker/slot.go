package broker

import "strings"

// hashSlots is how many hash slots a Redis Cluster divides its keys and
// shard channels into.
const hashSlots = 16384

// keySlot is the hash slot of a Redis key or shard channel, as Redis
// Cluster computes it: CRC16 (XMODEM) of the key, or of its hash tag (the
// part between the first "{" and the next "}", when not empty), mod 16384.
func keySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % hashSlots
}
