module github.com/DataDog/zstd

go 1.24

require github.com/klauspost/compress v1.17.11
