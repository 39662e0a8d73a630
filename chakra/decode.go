package chakra

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Error is a trace that cannot be read or replayed: the file, the byte offset of the record
// (in the uncompressed stream; -1 when not one record's fault), the node (record index and, once
// read, id and name), the field and what is wrong. The commands exit with status 2 on it.
type Error struct {
	File   string
	Offset int64
	// Record is the node's index among the file's node records (0 = the first after the
	// metadata), -1 for the GlobalMetadata record or the file as a whole.
	Record int
	ID     uint64
	HasID  bool
	Name   string
	Field  string
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	b.WriteString(": ")
	switch {
	case e.HasID:
		fmt.Fprintf(&b, "node %d", e.ID)
		if e.Name != "" {
			fmt.Fprintf(&b, " %q", e.Name)
		}
		fmt.Fprintf(&b, " (record %d", e.Record)
		if e.Offset >= 0 {
			fmt.Fprintf(&b, ", byte %d", e.Offset)
		}
		b.WriteString("): ")
	case e.Record >= 0:
		fmt.Fprintf(&b, "node record %d", e.Record)
		if e.Offset >= 0 {
			fmt.Fprintf(&b, " at byte %d", e.Offset)
		}
		b.WriteString(": ")
	case e.Offset >= 0:
		fmt.Fprintf(&b, "byte %d: ", e.Offset)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// gzipMagic starts a gzip stream (RFC 1952 §2.3.1); Chakra's readers choose gzip by it
// (src/third_party/utils/protoio.cc ProtoInputStream, protolib.py openFileRd @21585d8f2d65).
var gzipMagic = []byte{0x1f, 0x8b}

// ReadFile reads and decodes one ET file, plain or gzip-compressed.
func ReadFile(path string) (*Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err // the path is already in the message
		}
		return nil, &Error{File: path, Offset: -1, Record: -1, Msg: "cannot read: " + err.Error()}
	}
	return Parse(data, path)
}

// Parse decodes an ET file's bytes, uncompressing them first when they start with the gzip
// magic. file names the trace in messages.
func Parse(data []byte, file string) (*Trace, error) {
	if bytes.HasPrefix(data, gzipMagic) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, &Error{File: file, Offset: -1, Record: -1, Msg: "starts with the gzip magic but is not gzip: " + err.Error()}
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			return nil, &Error{File: file, Offset: -1, Record: -1, Msg: "gzip stream is corrupt or truncated: " + err.Error()}
		}
		data = plain
	}
	return Decode(data, file)
}

// Decode decodes an uncompressed ET stream: records of [varint32 length][message], the first a
// GlobalMetadata, every later one a Node (protolib.py encodeMessage/decodeMessage, protoio.cc
// ProtoOutputStream::write @21585d8f2d65). A record of length 0 is an empty message, as
// Chakra's C++ reader (the feeder's) reads it; its Python reader would stop there. Unknown fields are skipped, as proto3 readers do; a
// known field with the wrong wire type, a truncated record or a malformed varint is an Error
// naming the record and field.
func Decode(data []byte, file string) (*Trace, error) {
	t := &Trace{File: file}
	off := 0
	rec := -1 // -1: the metadata record
	for off < len(data) {
		fail := func(field, format string, args ...any) *Error {
			return &Error{File: file, Offset: int64(off), Record: rec, Field: field, Msg: fmt.Sprintf(format, args...)}
		}
		size, k := protowire.ConsumeVarint(data[off:])
		switch {
		case k < 0:
			return nil, fail("record length", "%v (a truncated or corrupt file)", parseErr(k))
		case size > math.MaxInt32:
			return nil, fail("record length", "%d does not fit a varint32: not a Chakra ET stream, or a corrupt one", size)
		case uint64(len(data)-off-k) < size:
			return nil, fail("record length", "%d bytes, but only %d are left in the file: truncated", size, len(data)-off-k)
		}
		body := data[off+k : off+k+int(size)]
		if rec < 0 {
			if err := decodeMetadata(body, &t.Metadata); err != nil {
				return nil, fail(err.field, "%s", err.msg)
			}
		} else {
			n := Node{Offset: int64(off)}
			if err := decodeNode(body, &n); err != nil {
				e := fail(err.field, "%s", err.msg)
				e.ID, e.HasID, e.Name = n.ID, err.hasID, n.Name
				return nil, e
			}
			t.Nodes = append(t.Nodes, n)
		}
		off += k + int(size)
		rec++
	}
	if rec < 0 {
		return nil, &Error{File: file, Offset: -1, Record: -1, Msg: "empty: no GlobalMetadata record (want a Chakra ET file: [varint32 length][GlobalMetadata], then the nodes)"}
	}
	return t, nil
}

// fieldErr is a decoding error inside one record: the field's path in the message and what
// is wrong.
type fieldErr struct {
	field string
	msg   string
	hasID bool // the node's id was read before the error
}

func ferr(field, format string, args ...any) *fieldErr {
	return &fieldErr{field: field, msg: fmt.Sprintf(format, args...)}
}

var wireNames = map[protowire.Type]string{protowire.VarintType: "varint", protowire.Fixed32Type: "fixed32",
	protowire.Fixed64Type: "fixed64", protowire.BytesType: "length-delimited", protowire.StartGroupType: "start-group",
	protowire.EndGroupType: "end-group"}

func wireName(t protowire.Type) string {
	if s, ok := wireNames[t]; ok {
		return s
	}
	return fmt.Sprintf("wire type %d", t)
}

// fields walks the fields of message b, calling f with each field's number, wire type and
// value bytes (a varint, fixed32 or fixed64 is passed decoded in v, a length-delimited field's
// contents in val). Unknown fields are the caller's to ignore.
func fields(b []byte, name func(protowire.Number) string, f func(num protowire.Number, typ protowire.Type, v uint64, val []byte) *fieldErr) *fieldErr {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ferr("tag", "%s", parseErr(n))
		}
		b = b[n:]
		var v uint64
		var val []byte
		switch typ {
		case protowire.VarintType, protowire.Fixed32Type, protowire.Fixed64Type:
			v, n = consumeScalar(typ, b)
		case protowire.BytesType:
			val, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return ferr(name(num), "%s (a truncated or corrupt record)", parseErr(n))
		}
		b = b[n:]
		if err := f(num, typ, v, val); err != nil {
			return err
		}
	}
	return nil
}

// parseErr is protowire's message for a negative length n, without its "proto: " prefix.
func parseErr(n int) string {
	s := protowire.ParseError(n).Error()
	s = strings.TrimPrefix(s, "proto:")
	return strings.TrimLeft(s, " \u00a0")
}

func wantType(field string, got, want protowire.Type) *fieldErr {
	if got != want {
		return ferr(field, "%s, want %s", wireName(got), wireName(want))
	}
	return nil
}

var metadataFields = map[protowire.Number]string{1: "version", 2: "attr"}

func decodeMetadata(b []byte, m *Metadata) *fieldErr {
	name := func(n protowire.Number) string { return "GlobalMetadata." + fieldName(metadataFields, n) }
	return fields(b, name, func(num protowire.Number, typ protowire.Type, _ uint64, val []byte) *fieldErr {
		switch num {
		case 1:
			if err := wantType(name(num), typ, protowire.BytesType); err != nil {
				return err
			}
			m.Version = string(val)
		case 2:
			return appendAttr(&m.Attrs, "GlobalMetadata.attr", typ, val)
		}
		return nil
	})
}

var nodeFields = map[protowire.Number]string{1: "id", 2: "name", 3: "type", 4: "ctrl_deps", 5: "data_deps",
	6: "start_time_micros", 7: "duration_micros", 8: "inputs", 9: "outputs", 10: "attr"}

func fieldName(names map[protowire.Number]string, n protowire.Number) string {
	if s, ok := names[n]; ok {
		return s
	}
	return fmt.Sprintf("field %d", n)
}

func decodeNode(b []byte, n *Node) *fieldErr {
	hasID := false
	name := func(num protowire.Number) string { return fieldName(nodeFields, num) }
	err := fields(b, name, func(num protowire.Number, typ protowire.Type, v uint64, val []byte) *fieldErr {
		switch num {
		case 1, 3, 6, 7:
			if err := wantType(name(num), typ, protowire.VarintType); err != nil {
				return err
			}
			switch num {
			case 1:
				n.ID, hasID = v, true
			case 3:
				n.Type = NodeType(int32(v)) // an enum is an int32 (proto3 language guide, Enumerations)
			case 6:
				n.StartMicros = v
			case 7:
				n.DurationMicros = v
			}
		case 2:
			if err := wantType(name(num), typ, protowire.BytesType); err != nil {
				return err
			}
			n.Name = string(val)
		case 4, 5:
			deps := &n.CtrlDeps
			if num == 5 {
				deps = &n.DataDeps
			}
			return appendUvarints(deps, name(num), typ, v, val)
		case 8, 9:
			if err := wantType(name(num), typ, protowire.BytesType); err != nil {
				return err
			}
			io := &n.Inputs
			if num == 9 {
				io = &n.Outputs
			}
			if *io == nil {
				*io = &IOInfo{}
			}
			return decodeIOInfo(val, *io, name(num))
		case 10:
			return appendAttr(&n.Attrs, "attr", typ, val)
		}
		return nil
	})
	if err != nil {
		err.hasID = hasID
	}
	return err
}

// consumeScalar reads one value of a scalar wire type (varint, fixed32, fixed64) from b: the
// value's bits and the bytes it took, or a negative protowire error code. Callers pass only
// those three types; any other is skipped as protowire skips a field value, with value 0.
func consumeScalar(typ protowire.Type, b []byte) (uint64, int) {
	switch typ {
	case protowire.VarintType:
		return protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		x, n := protowire.ConsumeFixed32(b)
		return uint64(x), n
	case protowire.Fixed64Type:
		return protowire.ConsumeFixed64(b)
	}
	return 0, protowire.ConsumeFieldValue(1, typ, b)
}

// appendUvarints appends a repeated uint64 field's values: packed (one length-delimited run of
// varints, proto3's default) or one varint per field; parsers must accept both (protobuf
// encoding guide, "Packed Repeated Fields").
func appendUvarints(dst *[]uint64, field string, typ protowire.Type, v uint64, val []byte) *fieldErr {
	switch typ {
	case protowire.VarintType:
		*dst = append(*dst, v)
	case protowire.BytesType:
		for len(val) > 0 {
			x, k := protowire.ConsumeVarint(val)
			if k < 0 {
				return ferr(field, "packed value %d: %s", len(*dst), parseErr(k))
			}
			*dst = append(*dst, x)
			val = val[k:]
		}
	default:
		return ferr(field, "%s, want varint or packed (length-delimited)", wireName(typ))
	}
	return nil
}

// appendAttr decodes a repeated AttributeProto field's next entry (named field[i] in errors)
// and appends it to attrs.
func appendAttr(attrs *[]Attr, field string, typ protowire.Type, val []byte) *fieldErr {
	field = fmt.Sprintf("%s[%d]", field, len(*attrs))
	if err := wantType(field, typ, protowire.BytesType); err != nil {
		return err
	}
	var a Attr
	if err := decodeAttr(val, &a, field); err != nil {
		return err
	}
	*attrs = append(*attrs, a)
	return nil
}

func decodeIOInfo(b []byte, io *IOInfo, field string) *fieldErr {
	names := map[protowire.Number]string{1: "values", 2: "shapes", 3: "types"}
	name := func(n protowire.Number) string { return field + "." + fieldName(names, n) }
	return fields(b, name, func(num protowire.Number, typ protowire.Type, _ uint64, val []byte) *fieldErr {
		if num < 1 || num > 3 {
			return nil
		}
		if err := wantType(name(num), typ, protowire.BytesType); err != nil {
			return err
		}
		switch num {
		case 1:
			io.Values = string(val)
		case 2:
			io.Shapes = string(val)
		case 3:
			io.Types = string(val)
		}
		return nil
	})
}

// scalarWire is the wire type of scalar attribute type t (protobuf encoding guide, "Message
// Structure": int32, int64, uint32, uint64, sint32, sint64, bool, enum are varints; fixed64,
// sfixed64, double are I64; fixed32, sfixed32, float are I32; string and bytes are LEN).
func scalarWire(t AttrType) protowire.Type {
	switch t {
	case DoubleVal, Fixed64Val, Sfixed64Val:
		return protowire.Fixed64Type
	case FloatVal, Fixed32Val, Sfixed32Val:
		return protowire.Fixed32Type
	case StringVal, BytesVal:
		return protowire.BytesType
	}
	return protowire.VarintType
}

// scalarValue converts a scalar's raw wire value (varint or fixed bits) into what Attr keeps.
func scalarValue(t AttrType, v uint64) (int64, float64) {
	switch t {
	case DoubleVal:
		return 0, math.Float64frombits(v)
	case FloatVal:
		return 0, float64(math.Float32frombits(uint32(v)))
	case Int32Val, Sfixed32Val:
		return int64(int32(v)), 0
	case Uint32Val, Fixed32Val:
		return int64(uint32(v)), 0
	case Sint32Val:
		return int64(int32(protowire.DecodeZigZag(v & math.MaxUint32))), 0
	case Sint64Val:
		return protowire.DecodeZigZag(v), 0
	case BoolVal:
		if v != 0 {
			return 1, 0
		}
		return 0, 0
	}
	return int64(v), 0 // int64, uint64 (its bits), fixed64, sfixed64
}

func (a *Attr) add(t AttrType, v uint64, s []byte) {
	switch kindOf(t) {
	case 'f':
		_, f := scalarValue(t, v)
		a.Floats = append(a.Floats, f)
	case 's':
		a.Strings = append(a.Strings, string(s))
	default:
		i, _ := scalarValue(t, v)
		a.Ints = append(a.Ints, i)
	}
}

func decodeAttr(b []byte, a *Attr, field string) *fieldErr {
	name := func(n protowire.Number) string {
		if a.Name != "" && n > 2 {
			return fmt.Sprintf("%s (%s).%s", field, a.Name, attrFieldName(n))
		}
		return field + "." + attrFieldName(n)
	}
	return fields(b, name,
		func(num protowire.Number, typ protowire.Type, v uint64, val []byte) *fieldErr {
			fname := name(num)
			switch {
			case num == 1 || num == 2:
				if err := wantType(fname, typ, protowire.BytesType); err != nil {
					return err
				}
				if num == 1 {
					a.Name = string(val)
				} else {
					a.Doc = string(val)
				}
				return nil
			case num < 3 || num >= protowire.Number(attrTypeEnd):
				return nil // unknown field
			}
			t := AttrType(num)
			// A oneof keeps the last member set; a message member seen twice merges (protobuf
			// encoding guide, "Oneofs" and "Last One Wins").
			if t != a.Type || !t.IsList() {
				a.Type, a.Ints, a.Floats, a.Strings = t, nil, nil, nil
			}
			if !t.IsList() {
				if err := wantType(fname, typ, scalarWire(t)); err != nil {
					return err
				}
				a.add(t, v, val)
				return nil
			}
			if err := wantType(fname, typ, protowire.BytesType); err != nil {
				return err
			}
			return decodeList(val, a, t.elem(), fname)
		})
}

// decodeList reads a *List message: field 1, values, repeated; numbers packed or not.
func decodeList(b []byte, a *Attr, elem AttrType, field string) *fieldErr {
	want := scalarWire(elem)
	return fields(b, func(protowire.Number) string { return field + ".values" },
		func(num protowire.Number, typ protowire.Type, v uint64, val []byte) *fieldErr {
			if num != 1 {
				return nil
			}
			if typ == want {
				a.add(elem, v, val)
				return nil
			}
			if typ != protowire.BytesType || want == protowire.BytesType {
				return ferr(field+".values", "%s, want %s", wireName(typ), wireName(want))
			}
			for len(val) > 0 { // packed
				x, k := consumeScalar(want, val)
				if k < 0 {
					return ferr(field+".values", "packed value: %s", parseErr(k))
				}
				a.add(elem, x, nil)
				val = val[k:]
			}
			return nil
		})
}

func attrFieldName(n protowire.Number) string {
	switch {
	case n == 1:
		return "name"
	case n == 2:
		return "doc_string"
	case n >= 3 && n < protowire.Number(attrTypeEnd):
		return AttrType(n).String()
	}
	return fmt.Sprintf("field %d", n)
}
