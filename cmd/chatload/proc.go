package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// procRSS returns the resident set size of pid (VmRSS) and its peak (VmHWM),
// in bytes.
func procRSS(pid int) (rss, hwm int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	rss, hwm = parseStatusRSS(string(raw))
	if rss == 0 {
		return 0, 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return rss, hwm, nil
}

// parseStatusRSS reads VmRSS and VmHWM, in bytes, from the text of
// /proc/<pid>/status; 0 for a line that is missing.
func parseStatusRSS(status string) (rss, hwm int64) {
	for line := range strings.SplitSeq(status, "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = parseKB(v)
		} else if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm = parseKB(v)
		}
	}
	return rss, hwm
}

func parseKB(v string) int64 {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n * 1024
}

// procCPU returns the CPU time (user + system) pid has used so far.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	d, ok := parseProcStat(raw)
	if !ok {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return d, nil
}

// procWrites returns how many write syscalls (write, writev, pwrite,
// sendmsg's kin as the kernel counts them: syscw in /proc/<pid>/io) pid has
// made so far.
func procWrites(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "syscw:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no syscw in /proc/%d/io", pid)
}

// parseProcStat returns the CPU time (utime + stime) of the text of
// /proc/<pid>/stat, false if it is malformed.
func parseProcStat(raw []byte) (time.Duration, bool) {
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis, where field 3 (state) starts.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// selfCPU returns the CPU time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU returns the busy and total CPU time of the machine, all cores,
// from /proc/stat.
func machineCPU() (busy, total time.Duration) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	return parseMachineStat(string(raw))
}

// parseMachineStat returns the busy and total CPU time of the first line
// of /proc/stat (all cores), 0 if it is not there.
func parseMachineStat(stat string) (busy, total time.Duration) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	var sum, idle int64
	for i, s := range f[1:] {
		if i >= 8 { // guest time is already counted in user
			break
		}
		n, _ := strconv.ParseInt(s, 10, 64)
		sum += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	tick := time.Second / clockTicks
	return time.Duration(sum-idle) * tick, time.Duration(sum) * tick
}

// Machine describes where the figures were measured.
type Machine struct {
	Hostname  string `json:"hostname"`
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	MemTotal  int64  `json:"mem_total_bytes"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
}

func machineInfo() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	m.Hostname, _ = os.Hostname()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m.MemTotal = parseKB(v)
			}
		}
	}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(raw))
	}
	return m
}
