package chakra

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Encode writes t as an uncompressed ET stream, the inverse of Decode: a GlobalMetadata record,
// then one record per node, each [varint32 length][message] (protolib.py encodeMessage
// @21585d8f2d65). Messages are written as protobuf serializers write proto3: fields in number
// order, scalars at their zero value left out, repeated numbers packed, a set oneof member and
// a present IOInfo written even when empty. It is how the test fixtures are made.
func Encode(t *Trace) []byte {
	var out []byte
	record := func(msg []byte) {
		out = protowire.AppendVarint(out, uint64(len(msg)))
		out = append(out, msg...)
	}
	record(encodeMetadata(&t.Metadata))
	for i := range t.Nodes {
		record(encodeNode(&t.Nodes[i]))
	}
	return out
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendUvarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func encodeMetadata(m *Metadata) []byte {
	b := appendString(nil, 1, m.Version)
	for i := range m.Attrs {
		b = appendMessage(b, 2, encodeAttr(&m.Attrs[i]))
	}
	return b
}

func encodeNode(n *Node) []byte {
	b := appendUvarint(nil, 1, n.ID)
	b = appendString(b, 2, n.Name)
	b = appendUvarint(b, 3, uint64(int64(n.Type))) // enums are sign-extended to 64 bits
	b = appendPacked(b, 4, n.CtrlDeps)
	b = appendPacked(b, 5, n.DataDeps)
	b = appendUvarint(b, 6, n.StartMicros)
	b = appendUvarint(b, 7, n.DurationMicros)
	for num, io := range []*IOInfo{n.Inputs, n.Outputs} {
		if io != nil {
			var m []byte
			m = appendString(m, 1, io.Values)
			m = appendString(m, 2, io.Shapes)
			m = appendString(m, 3, io.Types)
			b = appendMessage(b, protowire.Number(8+num), m)
		}
	}
	for i := range n.Attrs {
		b = appendMessage(b, 10, encodeAttr(&n.Attrs[i]))
	}
	return b
}

func appendPacked(b []byte, num protowire.Number, vs []uint64) []byte {
	if len(vs) == 0 {
		return b
	}
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, v)
	}
	return appendMessage(b, num, p)
}

// rawScalar is the wire value of element i of a's values as scalar type t.
func rawScalar(a *Attr, t AttrType, i int) uint64 {
	switch t {
	case DoubleVal:
		return math.Float64bits(a.Floats[i])
	case FloatVal:
		return uint64(math.Float32bits(float32(a.Floats[i])))
	case Sint32Val, Sint64Val:
		return protowire.EncodeZigZag(a.Ints[i])
	case Fixed32Val, Sfixed32Val, Uint32Val:
		return uint64(uint32(a.Ints[i]))
	case BoolVal:
		if a.Ints[i] != 0 {
			return 1
		}
		return 0
	}
	return uint64(a.Ints[i]) // int32 and int64 sign-extended, uint64, fixed64, sfixed64
}

func appendScalar(b []byte, t AttrType, v uint64) []byte {
	switch scalarWire(t) {
	case protowire.Fixed64Type:
		return protowire.AppendFixed64(b, v)
	case protowire.Fixed32Type:
		return protowire.AppendFixed32(b, uint32(v))
	}
	return protowire.AppendVarint(b, v)
}

func encodeAttr(a *Attr) []byte {
	b := appendString(nil, 1, a.Name)
	b = appendString(b, 2, a.Doc)
	t := a.Type
	kind := kindOf(t)
	if kind == 0 {
		return b
	}
	n := len(a.Ints)
	switch kind {
	case 'f':
		n = len(a.Floats)
	case 's':
		n = len(a.Strings)
	}
	num := protowire.Number(t)
	if !t.IsList() {
		if n == 0 {
			return b
		}
		if kind == 's' {
			return appendMessage(b, num, []byte(a.Strings[0]))
		}
		b = protowire.AppendTag(b, num, scalarWire(t))
		return appendScalar(b, t, rawScalar(a, t, 0))
	}
	var list []byte
	elem := t.elem()
	if kind == 's' {
		for _, s := range a.Strings {
			list = appendMessage(list, 1, []byte(s))
		}
	} else if n > 0 {
		var p []byte
		for i := 0; i < n; i++ {
			p = appendScalar(p, elem, rawScalar(a, elem, i))
		}
		list = appendMessage(list, 1, p)
	}
	return appendMessage(b, num, list)
}
