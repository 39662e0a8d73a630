package chakra

import "fmt"

// The schema is ChakraProtoMsg (proto3) of mlcommons/chakra schema/protobuf/et_def.proto
// @21585d8f2d65; field numbers and enum values below are that file's.

// NodeType is a node's kind (enum NodeType).
type NodeType int32

// Node types.
const (
	InvalidNode  NodeType = 0
	MetadataNode NodeType = 1
	MemLoadNode  NodeType = 2
	MemStoreNode NodeType = 3
	CompNode     NodeType = 4
	CommSendNode NodeType = 5
	CommRecvNode NodeType = 6
	CommCollNode NodeType = 7
)

var nodeTypeNames = [...]string{"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE",
	"COMP_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"}

func (t NodeType) String() string {
	if t >= 0 && int(t) < len(nodeTypeNames) {
		return nodeTypeNames[t]
	}
	return fmt.Sprintf("NodeType(%d)", int32(t))
}

// CollectiveType is a collective's kind (enum CollectiveCommType), carried by a COMM_COLL_NODE
// in its comm_type attribute.
type CollectiveType int64

// Collective types.
const (
	AllReduce          CollectiveType = 0
	Reduce             CollectiveType = 1
	AllGather          CollectiveType = 2
	Gather             CollectiveType = 3
	Scatter            CollectiveType = 4
	Broadcast          CollectiveType = 5
	AllToAll           CollectiveType = 6
	ReduceScatter      CollectiveType = 7
	ReduceScatterBlock CollectiveType = 8
	Barrier            CollectiveType = 9
)

var collectiveNames = [...]string{"ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER", "BROADCAST",
	"ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"}

func (c CollectiveType) String() string {
	if c >= 0 && int(c) < len(collectiveNames) {
		return collectiveNames[c]
	}
	return fmt.Sprintf("CollectiveCommType(%d)", int64(c))
}

// Trace is one ET file: the GlobalMetadata record, then the nodes in file order.
type Trace struct {
	File     string
	Metadata Metadata
	Nodes    []Node
}

// Metadata is message GlobalMetadata: version 1, attr 2.
type Metadata struct {
	Version string
	Attrs   []Attr
}

// Node is message Node. Inputs and Outputs are nil when the record has none.
type Node struct {
	ID       uint64   // 1
	Name     string   // 2
	Type     NodeType // 3
	CtrlDeps []uint64 // 4: the caller (PyTorch converter); not a readiness condition
	DataDeps []uint64 // 5: the nodes that must complete before this one starts
	// StartMicros and DurationMicros (6, 7) are the measured start and duration in microseconds.
	StartMicros    uint64
	DurationMicros uint64
	Inputs         *IOInfo // 8
	Outputs        *IOInfo // 9
	Attrs          []Attr  // 10

	// Offset is where the node's record starts in the (uncompressed) file, for messages.
	Offset int64
}

// IOInfo is message IOInfo: values 1, shapes 2, types 3, each a string as the converter
// printed it.
type IOInfo struct {
	Values, Shapes, Types string
}

// AttrType is which member of AttributeProto's oneof value is set: its field number (3 to 32),
// 0 when none is.
type AttrType int32

// Attribute value types (the oneof's field numbers); the zero AttrType is no value.
const (
	DoubleVal AttrType = iota + 3
	DoubleList
	FloatVal
	FloatList
	Int32Val
	Int32List
	Int64Val
	Int64List
	Uint32Val
	Uint32List
	Uint64Val
	Uint64List
	Sint32Val
	Sint32List
	Sint64Val
	Sint64List
	Fixed32Val
	Fixed32List
	Fixed64Val
	Fixed64List
	Sfixed32Val
	Sfixed32List
	Sfixed64Val
	Sfixed64List
	BoolVal
	BoolList
	StringVal
	StringList
	BytesVal
	BytesList
	attrTypeEnd
)

var attrTypeNames = [...]string{"double_val", "double_list", "float_val", "float_list", "int32_val", "int32_list",
	"int64_val", "int64_list", "uint32_val", "uint32_list", "uint64_val", "uint64_list", "sint32_val",
	"sint32_list", "sint64_val", "sint64_list", "fixed32_val", "fixed32_list", "fixed64_val", "fixed64_list",
	"sfixed32_val", "sfixed32_list", "sfixed64_val", "sfixed64_list", "bool_val", "bool_list", "string_val",
	"string_list", "bytes_val", "bytes_list"}

func (t AttrType) String() string {
	if t >= DoubleVal && t < attrTypeEnd {
		return attrTypeNames[t-DoubleVal]
	}
	if t == 0 {
		return "no value"
	}
	return fmt.Sprintf("AttrType(%d)", int32(t))
}

// IsList reports whether t is one of the *_list members (even field numbers).
func (t AttrType) IsList() bool { return t > DoubleVal && t < attrTypeEnd && t%2 == 0 }

// elem is the scalar member a list type repeats (its field number minus one).
func (t AttrType) elem() AttrType {
	if t.IsList() {
		return t - 1
	}
	return t
}

// Attr is message AttributeProto. The value is kept by kind: integers and booleans in Ints
// (each the value's 64 bits: a uint64 above 2^63 reads back with Uint), floats in Floats,
// strings and bytes in Strings; a scalar member has one element, a list any number.
type Attr struct {
	Name    string // 1
	Doc     string // 2
	Type    AttrType
	Ints    []int64
	Floats  []float64
	Strings []string
}

// kindOf says which of Ints ('i'), Floats ('f') or Strings ('s') holds values of type t, 0 for
// no value or a type outside the schema.
func kindOf(t AttrType) byte {
	if t < DoubleVal || t >= attrTypeEnd {
		return 0
	}
	switch t.elem() {
	case DoubleVal, FloatVal:
		return 'f'
	case StringVal, BytesVal:
		return 's'
	}
	return 'i'
}

// Int returns a scalar integer or boolean attribute's value; ok is false for any other type
// (a list, a float, a string, no value).
func (a *Attr) Int() (v int64, ok bool) {
	if a.Type.IsList() || kindOf(a.Type) != 'i' || len(a.Ints) != 1 {
		return 0, false
	}
	return a.Ints[0], true
}

// String returns a scalar string or bytes attribute's value.
func (a *Attr) String() (string, bool) {
	if a.Type.IsList() || kindOf(a.Type) != 's' || len(a.Strings) != 1 {
		return "", false
	}
	return a.Strings[0], true
}

// Attr returns the node's attribute named name, or nil. Of duplicate names the last wins, as
// in Chakra's feeder, which assigns the well-known attributes in a loop over all of them
// (src/feeder/et_feeder_node.cpp @21585d8f2d65).
func (n *Node) Attr(name string) *Attr {
	for i := len(n.Attrs) - 1; i >= 0; i-- {
		if n.Attrs[i].Name == name {
			return &n.Attrs[i]
		}
	}
	return nil
}
