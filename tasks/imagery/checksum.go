// Checksums: the multihash of a STAC item's file:checksum, and whether a
// stored file still has the content it names.

package imagery

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"strings"
)

// checksumMatches tells whether a stored file still has the content checksum names.
func checksumMatches(checksum string, sha256sum []byte, path string) (bool, error) {
	alg, want, known := parseMultihash(checksum)
	if !known {
		return false, nil
	}
	if alg == "sha2-256" {
		return bytes.Equal(sha256sum, want), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := newHash(alg)
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return bytes.Equal(h.Sum(nil), want), nil
}

// parseMultihash reads a hex multihash (file:checksum): 1220 sha2-256, 1340 sha2-512,
// 1114 sha1, d50110 md5. known is false for other algorithms and malformed values.
func parseMultihash(s string) (alg string, digest []byte, known bool) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) < 3 {
		return "", nil, false
	}
	var code uint64
	var shift uint
	i := 0
	for ; i < len(b) && i < 4; i++ {
		code |= uint64(b[i]&0x7f) << shift
		shift += 7
		if b[i]&0x80 == 0 {
			i++
			break
		}
	}
	if i >= len(b) {
		return "", nil, false
	}
	length := int(b[i])
	digest = b[i+1:]
	if len(digest) != length {
		return "", nil, false
	}
	switch {
	case code == 0x12 && length == 32:
		return "sha2-256", digest, true
	case code == 0x13 && length == 64:
		return "sha2-512", digest, true
	case code == 0x11 && length == 20:
		return "sha1", digest, true
	case code == 0xd5 && length == 16:
		return "md5", digest, true
	}
	return "", nil, false
}

func newHash(alg string) hash.Hash {
	switch alg {
	case "sha2-512":
		return sha512.New()
	case "sha1":
		return sha1.New()
	case "md5":
		return md5.New()
	}
	return sha256.New()
}
