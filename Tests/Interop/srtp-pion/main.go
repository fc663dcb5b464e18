// srtp-pion: an independent SRTP implementation (pion/srtp, from Debian's
// golang-github-pion-srtp.v2-dev) on the other side of Conduit's libsrtp-based SRTP, for the
// interoperability test in Tests/ConduitSRTPTests.
//
// It reads one JSON request on stdin and writes one JSON reply on stdout:
//
//	{"profile": "aes-cm-128-hmac-sha1-80", "key": "<base64 key||salt>",
//	 "decrypt_rtp": ["<hex>"], "decrypt_rtcp": ["<hex>"],
//	 "encrypt_rtp": ["<hex>"], "encrypt_rtcp": ["<hex>"]}
//
// Each list is processed in order with one context per direction; a packet that fails is "".
// Build in GOPATH mode: GO111MODULE=off GOPATH=/usr/share/gocode go run main.go
package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/srtp/v2"
)

type request struct {
	Profile     string   `json:"profile"`
	Key         string   `json:"key"`
	DecryptRTP  []string `json:"decrypt_rtp"`
	DecryptRTCP []string `json:"decrypt_rtcp"`
	EncryptRTP  []string `json:"encrypt_rtp"`
	EncryptRTCP []string `json:"encrypt_rtcp"`
}

type reply struct {
	DecryptRTP  []string `json:"decrypt_rtp"`
	DecryptRTCP []string `json:"decrypt_rtcp"`
	EncryptRTP  []string `json:"encrypt_rtp"`
	EncryptRTCP []string `json:"encrypt_rtcp"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "srtp-pion: "+format+"\n", args...)
	os.Exit(1)
}

// Every profile here has a 16-byte master key; the rest of the key text is the salt.
const keyLength = 16

func context(profile srtp.ProtectionProfile, keyAndSalt []byte) *srtp.Context {
	if len(keyAndSalt) <= keyLength {
		fail("the key text is too short")
	}
	ctx, err := srtp.CreateContext(keyAndSalt[:keyLength], keyAndSalt[keyLength:], profile)
	if err != nil {
		fail("%v", err)
	}
	return ctx
}

func each(packets []string, transform func([]byte) ([]byte, error)) []string {
	out := make([]string, 0, len(packets))
	for _, text := range packets {
		packet, err := hex.DecodeString(text)
		if err != nil {
			fail("bad hex: %v", err)
		}
		result, err := transform(packet)
		if err != nil {
			out = append(out, "")
			continue
		}
		out = append(out, hex.EncodeToString(result))
	}
	return out
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fail("bad request: %v", err)
	}
	profiles := map[string]srtp.ProtectionProfile{
		"aes-cm-128-hmac-sha1-80": srtp.ProtectionProfileAes128CmHmacSha1_80,
		"aes-cm-128-hmac-sha1-32": srtp.ProtectionProfileAes128CmHmacSha1_32,
		"aead-aes-128-gcm":        srtp.ProtectionProfileAeadAes128Gcm,
	}
	profile, ok := profiles[req.Profile]
	if !ok {
		fail("unknown profile %q", req.Profile)
	}
	keyAndSalt, err := base64.StdEncoding.DecodeString(req.Key)
	if err != nil {
		fail("bad key: %v", err)
	}
	decrypt := context(profile, keyAndSalt)
	encrypt := context(profile, keyAndSalt)
	var rep reply
	rep.DecryptRTP = each(req.DecryptRTP, func(p []byte) ([]byte, error) {
		var header rtp.Header
		return decrypt.DecryptRTP(nil, p, &header)
	})
	rep.DecryptRTCP = each(req.DecryptRTCP, func(p []byte) ([]byte, error) {
		var header rtcp.Header
		return decrypt.DecryptRTCP(nil, p, &header)
	})
	rep.EncryptRTP = each(req.EncryptRTP, func(p []byte) ([]byte, error) {
		return encrypt.EncryptRTP(nil, p, nil)
	})
	rep.EncryptRTCP = each(req.EncryptRTCP, func(p []byte) ([]byte, error) {
		return encrypt.EncryptRTCP(nil, p, nil)
	})
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fail("%v", err)
	}
}
