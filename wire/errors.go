package wire

import "fmt"

// DecodeError says what was wrong with a packet and where: the layer, the
// field and the byte offset of that field. Offset counts from the start of
// the buffer handed to the outermost decoder (the frame or packet), so it
// matches the byte numbers a hex dump or Wireshark shows.
type DecodeError struct {
	Layer  string // "ethernet", "ipv4", "bth", "pcap", ...
	Field  string // "checksum", "PktLen", "length", ...
	Offset int    // byte offset of the field
	Msg    string // what was wrong, with the values seen
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("wire: %s %s at byte %d: %s", e.Layer, e.Field, e.Offset, e.Msg)
}

func errorf(layer, field string, off int, format string, args ...any) *DecodeError {
	return &DecodeError{Layer: layer, Field: field, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// shortErr reports a buffer too short to hold a header of want bytes.
func shortErr(layer string, off, have, want int) *DecodeError {
	return errorf(layer, "length", off, "need %d bytes, have %d", want, have)
}

// at shifts the offset of a *DecodeError by base (the position of the
// sub-buffer inside the frame); other errors pass through.
func at(err error, base int) error {
	if e, ok := err.(*DecodeError); ok && base != 0 {
		c := *e
		c.Offset += base
		return &c
	}
	return err
}
