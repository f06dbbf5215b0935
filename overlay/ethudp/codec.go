package ethudp

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"strings"

	"github.com/pierrec/lz4/v4"
)

// Size bounds of the reference implementation (EthUDP.c), in bytes.
const (
	// MaxFrameSize is the largest Ethernet frame the reference reads from its interface and the
	// largest datagram it reads from its UDP socket (MAX_PACKET_SIZE, jumbo frames).
	MaxFrameSize = 9234
	// MinFrameSize is the smallest payload this package accepts as an Ethernet frame: two MAC
	// addresses and an EtherType. The reference forwards shorter payloads; they cannot be frames.
	MinFrameSize = 14
	// lz4Space is the reference's LZ4_SPACE: the slack it adds to the compression and
	// decompression buffers.
	lz4Space = 128
	// MaxPlainSize is the largest decompressed payload the reference accepts
	// (MAX_PACKET_SIZE + LZ4_SPACE); Decode refuses LZ4 blocks that expand past it.
	MaxPlainSize = MaxFrameSize + lz4Space
	// MaxDatagramSize is the largest datagram Decode accepts. It leaves room for the largest
	// frame plus the LZ4 flag byte and AES padding; the reference itself truncates what it reads
	// at MaxFrameSize.
	MaxDatagramSize = MaxPlainSize
	// MinMTU and MaxMTU bound Options.MTU (the reference's -mtu, 1036–1500).
	MinMTU = 1036
	MaxMTU = 1500
	// UDPOverhead is what the reference subtracts from the MTU: an IPv4 header and a UDP header.
	UDPOverhead = 28
	// FragHeaderSize is the UDPFRG header: the 6 ASCII bytes "UDPFRG" and a 16-bit big-endian
	// sequence number.
	FragHeaderSize = 8
	// FragFirstSize is the number of body bytes in the first half of a fragmented datagram.
	FragFirstSize = 1000
	// MaxFragmentableSize is the largest datagram body the reference fragments; it silently drops
	// larger ones that exceed the MTU. Bodies of FragFirstSize bytes or less never need it.
	MaxFragmentableSize = 1999
	// MaxFragDatagramSize is the largest UDPFRG datagram a receiver accepts (header + 1000).
	MaxFragDatagramSize = FragHeaderSize + FragFirstSize
	// MaxKeyLen and MaxPasswordLen are the longest key and password strings the reference keeps
	// (MAXLEN-1).
	MaxKeyLen      = 2047
	MaxPasswordLen = 2047
	// MaxLZ4Acceleration is the largest -lz4 value the reference documents.
	MaxLZ4Acceleration = 9
)

// DefaultKey is the key the reference uses when a cipher is chosen without a key.
const DefaultKey = "123456"

// Trailing flag bytes appended after LZ4 processing, when LZ4 is enabled.
const (
	// FlagCompressed marks a body that is an LZ4 block (the block was shorter than the input).
	FlagCompressed byte = 0xff
	// FlagPlain marks a body sent as is because LZ4 did not make it shorter.
	FlagPlain byte = 0xaa
)

// Control message prefixes. Control messages travel through the same compression, encryption
// and fragmentation as frames; a payload starting with one of these is never delivered as a frame.
const (
	// PingMessage is sent every tick by both ends; exactly these 10 bytes.
	PingMessage = "PING:PING:"
	// PongMessage answers a PING; exactly these 10 bytes.
	PongMessage = "PONG:PONG:"
	// PasswordPrefix starts the password message: the prefix, the password, one NUL byte.
	PasswordPrefix = "PASSWORD:"
	// FragMagic starts both halves of a fragmented datagram.
	FragMagic = "UDPFRG"
)

// Cipher names one of the reference's -enc algorithms. All of them are weak (see the package
// documentation) and exist for interoperability only.
type Cipher uint8

// The ciphers of the reference.
const (
	CipherNone   Cipher = iota // no encryption
	CipherXOR                  // repeating-key xor: obfuscation, not encryption
	CipherAES128               // AES-128-CBC, zero IV, PKCS#7 padding, no integrity
	CipherAES192               // AES-192-CBC, zero IV, PKCS#7 padding, no integrity
	CipherAES256               // AES-256-CBC, zero IV, PKCS#7 padding, no integrity
)

// String returns the reference's -enc spelling ("none" for CipherNone).
func (c Cipher) String() string {
	switch c {
	case CipherNone:
		return "none"
	case CipherXOR:
		return "xor"
	case CipherAES128:
		return "aes-128"
	case CipherAES192:
		return "aes-192"
	case CipherAES256:
		return "aes-256"
	}
	return fmt.Sprintf("cipher(%d)", uint8(c))
}

// ParseCipher maps the reference's -enc spellings ("xor", "aes-128", "aes-192", "aes-256") and
// "" or "none" to a Cipher, and refuses anything else.
func ParseCipher(s string) (Cipher, error) {
	switch s {
	case "", "none":
		return CipherNone, nil
	case "xor":
		return CipherXOR, nil
	case "aes-128":
		return CipherAES128, nil
	case "aes-192":
		return CipherAES192, nil
	case "aes-256":
		return CipherAES256, nil
	}
	return CipherNone, fmt.Errorf("ethudp: cipher %q: unknown; use none, xor, aes-128, aes-192 or aes-256", s)
}

func (c Cipher) aesKeySize() int {
	switch c {
	case CipherAES128:
		return 16
	case CipherAES192:
		return 24
	case CipherAES256:
		return 32
	}
	return 0
}

// Options are the per-link wire options; both ends must agree on LZ4 (on or off), Cipher, Key and
// on whether MTU is set (a receiver reassembles UDPFRG halves only when its own MTU is set).
type Options struct {
	// LZ4 is the reference's -lz4 N: 0 disables LZ4 and the flag byte; 1–9 enables both. N is
	// the reference's acceleration; it does not change the format, and this package always
	// uses github.com/pierrec/lz4's fast block compressor.
	LZ4 int
	// Cipher is the -enc algorithm.
	Cipher Cipher
	// Key is the -k string (1–2047 bytes, no NUL). As in the reference, a Cipher without a Key
	// uses DefaultKey, and a Key without a Cipher means CipherAES128.
	Key string
	// MTU is the reference's -mtu: 0 (no fragmentation and no reassembly) or 1036–1500. A
	// datagram longer than MTU-28 bytes is sent as two UDPFRG halves.
	MTU int
}

// Codec applies one link's Options. It holds no mutable state and is safe for concurrent use;
// sequence numbers live in an Encoder and pending halves in a Decoder.
type Codec struct {
	opts  Options
	key   []byte       // the key string's bytes (xor)
	block cipher.Block // AES with the zero-padded key, nil otherwise
}

// NewCodec validates opts, applies the reference's defaults (see Options.Key) and returns the
// codec. warn, when not nil, receives one message per weakness in effect (any cipher); it is the
// caller's log hook.
func NewCodec(opts Options, warn func(msg string)) (*Codec, error) {
	if opts.LZ4 < 0 || opts.LZ4 > MaxLZ4Acceleration {
		return nil, fmt.Errorf("ethudp: options: LZ4 %d out of range; use 0 (off) or 1-%d", opts.LZ4, MaxLZ4Acceleration)
	}
	if opts.MTU != 0 && (opts.MTU < MinMTU || opts.MTU > MaxMTU) {
		return nil, fmt.Errorf("ethudp: options: MTU %d out of range; use 0 (off) or %d-%d", opts.MTU, MinMTU, MaxMTU)
	}
	if opts.Cipher > CipherAES256 {
		return nil, fmt.Errorf("ethudp: options: %v unknown; use none, xor, aes-128, aes-192 or aes-256", opts.Cipher)
	}
	if len(opts.Key) > MaxKeyLen || strings.IndexByte(opts.Key, 0) >= 0 {
		return nil, fmt.Errorf("ethudp: options: key of %d bytes: use 1-%d bytes without NUL (the reference keeps a C string)", len(opts.Key), MaxKeyLen)
	}
	switch {
	case opts.Cipher != CipherNone && opts.Key == "":
		opts.Key = DefaultKey
	case opts.Cipher == CipherNone && opts.Key != "":
		opts.Cipher = CipherAES128
	}
	c := &Codec{opts: opts, key: []byte(opts.Key)}
	if n := opts.Cipher.aesKeySize(); n > 0 {
		k := make([]byte, n)
		copy(k, opts.Key)
		b, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("ethudp: options: %v key: %w", opts.Cipher, err)
		}
		c.block = b
		if warn != nil {
			warn(fmt.Sprintf("ethudp: %v with a constant zero IV and no integrity check is weak; it is for interoperability with EthUDP only", opts.Cipher))
			if len(opts.Key) < n {
				warn(fmt.Sprintf("ethudp: %v key is %d bytes, shorter than %d: zero-padded as the reference does", opts.Cipher, len(opts.Key), n))
			}
		}
	} else if opts.Cipher == CipherXOR && warn != nil {
		warn("ethudp: xor is obfuscation, not encryption; it is for interoperability with EthUDP only")
	}
	return c, nil
}

// Options returns the options in effect, after the defaults of NewCodec.
func (c *Codec) Options() Options { return c.opts }

// Seal applies LZ4 (with its flag byte) and then the cipher to payload, as the reference does
// before fragmentation. compressed reports whether the LZ4 block was used. payload must hold
// 1–MaxPlainSize bytes; Seal does not modify it.
func (c *Codec) Seal(payload []byte) (body []byte, compressed bool, err error) {
	if len(payload) == 0 || len(payload) > MaxPlainSize {
		return nil, false, fmt.Errorf("ethudp: seal: payload of %d bytes: use 1-%d bytes", len(payload), MaxPlainSize)
	}
	body = payload
	if c.opts.LZ4 > 0 {
		dst := make([]byte, lz4.CompressBlockBound(len(payload))+1)
		// lz4.CompressBlock reuses pooled compressors: a fresh lz4.Compressor is a 136 KiB
		// hash table to zero for every frame.
		n, cerr := lz4.CompressBlock(payload, dst[:len(dst)-1], nil)
		if cerr == nil && n > 0 && n < len(payload) {
			dst[n] = FlagCompressed
			body, compressed = dst[:n+1], true
		} else {
			body = append(append(make([]byte, 0, len(payload)+1), payload...), FlagPlain)
		}
	}
	switch {
	case c.opts.Cipher == CipherXOR:
		out := make([]byte, len(body))
		c.xor(out, body)
		body = out
	case c.block != nil:
		pad := aes.BlockSize - len(body)%aes.BlockSize
		out := make([]byte, len(body)+pad)
		copy(out, body)
		for i := len(body); i < len(out); i++ {
			out[i] = byte(pad)
		}
		cipher.NewCBCEncrypter(c.block, make([]byte, aes.BlockSize)).CryptBlocks(out, out)
		body = out
	case c.opts.LZ4 == 0:
		body = bytes.Clone(payload)
	}
	return body, compressed, nil
}

func (c *Codec) xor(dst, src []byte) {
	for i, b := range src {
		dst[i] = b ^ c.key[i%len(c.key)]
	}
}

// Open reverses Seal on one whole (reassembled) datagram body: decrypt, then check and strip the
// LZ4 flag byte and decompress. The error is a *DropError naming the reason.
func (c *Codec) Open(body []byte) (payload []byte, compressed bool, err error) {
	if len(body) == 0 {
		return nil, false, dropf(DropTruncated, "empty datagram")
	}
	if len(body) > MaxDatagramSize {
		return nil, false, dropf(DropOversize, "datagram of %d bytes exceeds %d", len(body), MaxDatagramSize)
	}
	plain := body
	switch {
	case c.opts.Cipher == CipherXOR:
		plain = make([]byte, len(body))
		c.xor(plain, body)
	case c.block != nil:
		if len(body)%aes.BlockSize != 0 {
			return nil, false, dropf(DropDecrypt, "%v ciphertext of %d bytes is not a multiple of %d", c.opts.Cipher, len(body), aes.BlockSize)
		}
		out := make([]byte, len(body))
		cipher.NewCBCDecrypter(c.block, make([]byte, aes.BlockSize)).CryptBlocks(out, body)
		pad := int(out[len(out)-1])
		if pad == 0 || pad > aes.BlockSize {
			return nil, false, dropf(DropDecrypt, "%v padding byte %d invalid (wrong key or corrupt datagram)", c.opts.Cipher, pad)
		}
		for _, b := range out[len(out)-pad:] {
			if int(b) != pad {
				return nil, false, dropf(DropDecrypt, "%v padding invalid (wrong key or corrupt datagram)", c.opts.Cipher)
			}
		}
		plain = out[:len(out)-pad]
	}
	if c.opts.LZ4 > 0 {
		if len(plain) == 0 {
			return nil, false, dropf(DropTruncated, "no LZ4 flag byte")
		}
		flag, data := plain[len(plain)-1], plain[:len(plain)-1]
		switch flag {
		case FlagPlain:
			plain = data
		case FlagCompressed:
			out := make([]byte, MaxPlainSize)
			n, derr := lz4.UncompressBlock(data, out)
			if derr != nil {
				return nil, false, &DropError{Reason: DropDecompress, Msg: fmt.Sprintf("LZ4 block of %d bytes does not decompress within %d bytes", len(data), MaxPlainSize), Err: derr}
			}
			plain, compressed = out[:n], true
		default:
			return nil, false, dropf(DropBadFlag, "LZ4 flag byte 0x%02x; want 0xff (compressed) or 0xaa (plain): is LZ4 enabled at both ends?", flag)
		}
	}
	if len(plain) == 0 {
		return nil, false, dropf(DropTruncated, "empty payload")
	}
	if c.opts.Cipher == CipherNone && !compressed {
		plain = bytes.Clone(plain) // do not alias the caller's datagram buffer
	}
	return plain, compressed, nil
}

// Kind classifies a decoded payload the way the reference does, by prefix, in this order:
// PASSWORD, PING, PONG, else an Ethernet frame.
type Kind uint8

// The kinds of decoded payloads.
const (
	KindHalf     Kind = iota // a UDPFRG half was stored; nothing to deliver yet
	KindFrame                // an Ethernet frame
	KindPing                 // "PING:PING:" (to be answered with a PONG)
	KindPong                 // "PONG:PONG:"
	KindPassword             // "PASSWORD:" + password + NUL
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindHalf:
		return "half"
	case KindFrame:
		return "frame"
	case KindPing:
		return "ping"
	case KindPong:
		return "pong"
	case KindPassword:
		return "password"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Classify returns the kind of a decoded payload.
func Classify(payload []byte) Kind {
	switch {
	case bytes.HasPrefix(payload, []byte(PasswordPrefix)):
		return KindPassword
	case bytes.HasPrefix(payload, []byte(PingMessage)):
		return KindPing
	case bytes.HasPrefix(payload, []byte(PongMessage)):
		return KindPong
	}
	return KindFrame
}

// PasswordPayload returns the password message the reference sends: PasswordPrefix, the
// password, one NUL byte. password must be 1–MaxPasswordLen bytes without NUL.
func PasswordPayload(password string) ([]byte, error) {
	if err := checkPassword(password); err != nil {
		return nil, err
	}
	return append([]byte(PasswordPrefix+password), 0), nil
}

func checkPassword(pw string) error {
	if pw == "" || len(pw) > MaxPasswordLen || strings.IndexByte(pw, 0) >= 0 {
		return fmt.Errorf("ethudp: password of %d bytes: use 1-%d bytes without NUL", len(pw), MaxPasswordLen)
	}
	return nil
}

// PasswordMatches reports whether a password message carries password: the bytes after the
// prefix equal it and are followed by a NUL or by the end of the message (bytes after the NUL are
// ignored, as in the reference).
func PasswordMatches(payload []byte, password string) bool {
	rest, ok := bytes.CutPrefix(payload, []byte(PasswordPrefix))
	if !ok || password == "" || !bytes.HasPrefix(rest, []byte(password)) {
		return false
	}
	return len(rest) == len(password) || rest[len(password)] == 0
}

// DropReason says why a datagram or frame was dropped; Link counts drops by reason.
type DropReason uint8

// The drop reasons.
const (
	DropBadFlag       DropReason = iota // LZ4 flag byte neither 0xff nor 0xaa
	DropTruncated                       // too short: empty, shorter than its header or than a frame
	DropStaleHalf                       // a UDPFRG half whose pair did not come within the timeout, or evicted
	DropWrongPassword                   // a password message with another password
	DropDecrypt                         // AES ciphertext length or padding invalid
	DropDecompress                      // LZ4 block invalid or expanding past MaxPlainSize
	DropOversize                        // longer than the format allows
	DropUnknownPeer                     // from an address other than the peer (or a filtered NAT peer)
	DropNoPeer                          // send while no peer address is known yet (NAT mode)
	DropQueueFull                       // the receive queue was full
	DropSendError                       // the socket refused the datagram
	numDropReasons
)

// String names the reason with a stable, metric-friendly word.
func (r DropReason) String() string {
	switch r {
	case DropBadFlag:
		return "bad-flag"
	case DropTruncated:
		return "truncated"
	case DropStaleHalf:
		return "stale-half"
	case DropWrongPassword:
		return "wrong-password"
	case DropDecrypt:
		return "decrypt"
	case DropDecompress:
		return "decompress"
	case DropOversize:
		return "oversize"
	case DropUnknownPeer:
		return "unknown-peer"
	case DropNoPeer:
		return "no-peer"
	case DropQueueFull:
		return "queue-full"
	case DropSendError:
		return "send-error"
	}
	return fmt.Sprintf("drop(%d)", uint8(r))
}

// DropError is the error of a refused datagram or frame: the reason to count and a message
// naming what was wrong.
type DropError struct {
	Reason DropReason
	Msg    string
	Err    error // the underlying error, if any
}

// Error implements error.
func (e *DropError) Error() string {
	s := "ethudp: dropped (" + e.Reason.String() + "): " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *DropError) Unwrap() error { return e.Err }

func dropf(r DropReason, format string, args ...any) *DropError {
	return &DropError{Reason: r, Msg: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the drop reason carried by err and whether there is one.
func ReasonOf(err error) (DropReason, bool) {
	var d *DropError
	if errors.As(err, &d) {
		return d.Reason, true
	}
	return 0, false
}
