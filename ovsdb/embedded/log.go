package embedded

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// recordMagic starts the header line of every record of an ovsdb-server
// standalone database file (ovsdb/log.c, magic "OVSDB JSON").
const recordMagic = "OVSDB JSON"

// encodeRecord returns one log record: the header line
// "OVSDB JSON <length> <sha1-hex>\n" and the JSON text followed by a newline,
// as ovsdb_log_write writes it: length and SHA-1 cover the JSON text and its
// newline.
func encodeRecord(data []byte) []byte {
	body := append(append(make([]byte, 0, len(data)+1), data...), '\n')
	sum := sha1.Sum(body)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %d %s\n", recordMagic, len(body), hex.EncodeToString(sum[:]))
	b.Write(body)
	return b.Bytes()
}

// parseLog splits a database file into its valid records. It stops at the
// first record that is incomplete, fails its checksum or is not a JSON
// object, and returns the byte offset where that record starts (len(buf)
// when every record is valid): everything from there on is a torn or
// corrupt tail, which ovsdb-server also discards.
func parseLog(buf []byte) (records []json.RawMessage, good int) {
	off := 0
	for off < len(buf) {
		nl := bytes.IndexByte(buf[off:], '\n')
		if nl < 0 {
			break
		}
		fields := bytes.Fields(buf[off : off+nl])
		if len(fields) != 4 || string(fields[0])+" "+string(fields[1]) != recordMagic {
			break
		}
		n, err := strconv.Atoi(string(fields[2]))
		if err != nil || n < 0 {
			break
		}
		start := off + nl + 1
		if n > len(buf)-start {
			break
		}
		data := buf[start : start+n]
		sum := sha1.Sum(data)
		if hex.EncodeToString(sum[:]) != string(bytes.ToLower(fields[3])) {
			break
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			break
		}
		end := start + n
		if end < len(buf) && buf[end] == '\n' {
			end++
		}
		records = append(records, json.RawMessage(bytes.TrimSpace(data)))
		off = end
	}
	return records, off
}
