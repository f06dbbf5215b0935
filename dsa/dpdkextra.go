package dsa

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds of the DPDK command-line helpers.
const (
	// MaxDPDKExtraLen bounds the other_config:dpdk-extra text FilePrefix reads, in bytes.
	MaxDPDKExtraLen = 64 << 10
	// MaxDPDKExtraWords bounds the words FilePrefix splits dpdk-extra into.
	MaxDPDKExtraWords = 4096
	// MaxFilePrefixLen bounds a --file-prefix value. DPDK makes it a directory name under
	// /var/run/dpdk and the idxd bus compares work-queue names against "<prefix>_".
	MaxFilePrefixLen = 64
	// MaxIdxdQueues is the most work queues DPDK's idxd PCI driver can set up on one device:
	// it reads the count from the 8-bit "number of WQs" field of the device's WQCAP register.
	// A device's own max_work_queues (8 on a 4th-gen Xeon DSA) is the tighter bound, which
	// the planner checks.
	MaxIdxdQueues = 255
)

// FilePrefix returns the value of DPDK's --file-prefix option in dpdkExtra (the text of
// Open_vSwitch other_config:dpdk-extra), or "" when the option is absent. The text is split
// into words the way ovs-vswitchd does it (lib/svec.c svec_parse_words: white space separates
// words; single and double quotes group, and are removed; a backslash outside single quotes
// escapes the next byte), then read as DPDK's EAL does: "--file-prefix X" or
// "--file-prefix=X", the last one winning (an abbreviation getopt would also take, such as
// "--file-pre=X", is not recognised). The value must be 1..MaxFilePrefixLen bytes of
// letters, digits, '.', '_' and '-': it becomes a directory name and the prefix of
// work-queue names DPDK accepts. Text longer than MaxDPDKExtraLen, more than
// MaxDPDKExtraWords words, a trailing backslash, an unclosed quote, a missing or bad value
// are errors naming dpdk-extra and the fix.
func FilePrefix(dpdkExtra string) (string, error) {
	words, err := splitDPDKExtra(dpdkExtra)
	if err != nil {
		return "", err
	}
	const opt = "--file-prefix"
	prefix := ""
	for i := 0; i < len(words); i++ {
		w := words[i]
		var v string
		switch {
		case w == opt:
			if i+1 == len(words) {
				return "", fmt.Errorf("other_config:dpdk-extra: %s has no value (write %s=NAME)", opt, opt)
			}
			i++
			v = words[i]
		case strings.HasPrefix(w, opt+"="):
			v = w[len(opt)+1:]
		default:
			continue
		}
		if err := checkFilePrefix(v); err != nil {
			return "", err
		}
		prefix = v
	}
	return prefix, nil
}

// checkFilePrefix validates a --file-prefix value.
func checkFilePrefix(v string) error {
	if v == "" || len(v) > MaxFilePrefixLen {
		return fmt.Errorf("other_config:dpdk-extra: --file-prefix value of %d bytes (want 1 to %d letters, digits, '.', '_' or '-')", len(v), MaxFilePrefixLen)
	}
	for i := 0; i < len(v); i++ {
		if !isPrefixByte(v[i]) {
			return fmt.Errorf("other_config:dpdk-extra: --file-prefix %q holds byte %q (use only letters, digits, '.', '_' and '-')", v, v[i])
		}
	}
	return nil
}

func isPrefixByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// isOVSSpace is C's isspace in the "C" locale, what svec_parse_words splits on.
func isOVSSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// splitDPDKExtra splits dpdk-extra into words like OVS's svec_parse_words. Where OVS only logs
// a trailing backslash and keeps going, this refuses it, and an unclosed quote too: a
// configuration OVS reads in a surprising way is better fixed than guessed at.
func splitDPDKExtra(s string) ([]string, error) {
	if len(s) > MaxDPDKExtraLen {
		return nil, fmt.Errorf("other_config:dpdk-extra: %d bytes (at most %d)", len(s), MaxDPDKExtraLen)
	}
	var words []string
	var w strings.Builder
	i := 0
	for {
		for i < len(s) && isOVSSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return words, nil
		}
		if len(words) == MaxDPDKExtraWords {
			return nil, fmt.Errorf("other_config:dpdk-extra: more than %d words", MaxDPDKExtraWords)
		}
		w.Reset()
		var quote byte
	word:
		for ; i < len(s); i++ {
			c := s[i]
			switch {
			case quote != 0 && c == quote:
				quote = 0
			case c == '\'' || c == '"':
				// As in OVS, the other quote character inside quotes opens a new quote.
				quote = c
			case c == '\\' && quote != '\'':
				i++
				if i == len(s) {
					return nil, fmt.Errorf("other_config:dpdk-extra: ends in a backslash (remove it or escape it as \\\\)")
				}
				w.WriteByte(s[i])
			case isOVSSpace(c) && quote == 0:
				break word
			default:
				w.WriteByte(c)
			}
		}
		if quote != 0 {
			return nil, fmt.Errorf("other_config:dpdk-extra: unclosed %c quote (close it)", quote)
		}
		words = append(words, w.String())
	}
}

// AllowArgs returns the dpdk-extra words that hand the DSA device at PCI address bdf, bound
// to vfio-pci, to DPDK's idxd driver with maxQueues work queues, which DPDK configures itself
// (dedicated, the device's WQ space split equally): "-a 0000:6a:01.0,max_queues=4". bdf must
// be the full address as sysfs spells it, domain:bus:device.function in lowercase hex
// (dddd:bb:dd.f, device at most 1f, function at most 7); maxQueues must be 1..MaxIdxdQueues.
// The result is built only from the parsed numbers, never from the input text itself.
func AllowArgs(bdf string, maxQueues int) (string, error) {
	addr, err := parseBDF(bdf)
	if err != nil {
		return "", Errorf(CodeInvalidRequest, quoteObject(bdf), err, "not a PCI address: write it as sysfs does, domain:bus:device.function in lowercase hex, e.g. 0000:6a:01.0")
	}
	if maxQueues < 1 || maxQueues > MaxIdxdQueues {
		return "", Errorf(CodeInvalidRequest, addr.String(), nil, "max_queues %d: DPDK's idxd driver takes 1 to %d work queues per device (and no more than the device's max_work_queues)", maxQueues, MaxIdxdQueues)
	}
	return "-a " + addr.String() + ",max_queues=" + strconv.Itoa(maxQueues), nil
}

// pciAddr is a parsed PCI address.
type pciAddr struct {
	domain        uint16
	bus, dev, fun uint8
}

// String renders the address as sysfs does.
func (a pciAddr) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.domain, a.bus, a.dev, a.fun)
}

// parseBDF parses exactly dddd:bb:dd.f in lowercase hex.
func parseBDF(s string) (pciAddr, error) {
	const form = "dddd:bb:dd.f"
	if len(s) != len(form) {
		return pciAddr{}, fmt.Errorf("%d bytes, want %d (%s)", len(s), len(form), form)
	}
	hex := func(part string) (uint64, error) {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return 0, fmt.Errorf("byte %q is not a lowercase hex digit (%s)", c, form)
			}
		}
		return strconv.ParseUint(part, 16, 16)
	}
	if s[4] != ':' || s[7] != ':' || s[10] != '.' {
		return pciAddr{}, fmt.Errorf("separators are not where %s has them", form)
	}
	var n [4]uint64
	for i, part := range []string{s[0:4], s[5:7], s[8:10], s[11:12]} {
		v, err := hex(part)
		if err != nil {
			return pciAddr{}, err
		}
		n[i] = v
	}
	if n[2] > 0x1f {
		return pciAddr{}, fmt.Errorf("device %02x is above 1f", n[2])
	}
	if n[3] > 7 {
		return pciAddr{}, fmt.Errorf("function %x is above 7", n[3])
	}
	return pciAddr{domain: uint16(n[0]), bus: uint8(n[1]), dev: uint8(n[2]), fun: uint8(n[3])}, nil
}

// quoteObject renders untrusted text for an error's Object: quoted and cut to 40 bytes.
func quoteObject(s string) string {
	return fmt.Sprintf("%.40q", s)
}
