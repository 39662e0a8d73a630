package chakra

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

func readFixture(t *testing.T, path string) *Trace {
	t.Helper()
	tr, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestDecodeFixture reads testdata/dp16.0.et and dp16.8.et field by field against the values
// the generator (fixture_test.go) wrote.
func TestDecodeFixture(t *testing.T) {
	tr := readFixture(t, "testdata/dp16.0.et")
	if tr.Metadata.Version != "0.0.4" || len(tr.Metadata.Attrs) != 2 {
		t.Fatalf("metadata %+v", tr.Metadata)
	}
	if s, ok := tr.Metadata.Attrs[0].String(); !ok || tr.Metadata.Attrs[0].Name != "generator" || s != "fabricsim chakra/fixture_test.go dp16" {
		t.Errorf("metadata attr 0 %+v", tr.Metadata.Attrs[0])
	}
	// A uint64_val of 0 is present (a set oneof member is written even at zero).
	if a := tr.Metadata.Attrs[1]; a.Name != "rank" || a.Type != Uint64Val || len(a.Ints) != 1 || a.Ints[0] != 0 {
		t.Errorf("metadata attr 1 %+v", a)
	}
	if len(tr.Nodes) != 11 {
		t.Fatalf("%d nodes, want 11", len(tr.Nodes))
	}
	// The first record's length is 0x46 = 70 (one varint byte), so node 0 starts at byte 71.
	if tr.Nodes[0].Offset != 71 {
		t.Errorf("node 0 at byte %d, want 71", tr.Nodes[0].Offset)
	}
	md := tr.Nodes[0]
	if md.ID != 0 || md.Type != MetadataNode || md.Name != "## process_group:init ##" || md.Inputs == nil ||
		!strings.HasPrefix(md.Inputs.Values, `['[{"pg_name": "0"`) || md.Inputs.Types != "['String']" || md.Outputs != nil {
		t.Errorf("node 0 %+v", md)
	}
	f := tr.Nodes[1]
	if f.ID != 1 || f.Name != "fwd layers 0-3" || f.Type != CompNode || !reflect.DeepEqual(f.DataDeps, []uint64{0}) ||
		f.CtrlDeps != nil || f.DurationMicros != 1500 || f.StartMicros != 0 {
		t.Errorf("node 1 %+v", f)
	}
	if f.Inputs == nil || f.Inputs.Values != "[[100, 101, 0, 4194304, 2, 'cuda:0']]" || f.Inputs.Shapes != "[[4, 1024, 1024]]" ||
		f.Outputs == nil || f.Outputs.Values != "[[102, 103, 0, 4194304, 2, 'cuda:0']]" {
		t.Errorf("node 1 inputs %+v outputs %+v", f.Inputs, f.Outputs)
	}
	wantAttrs := []Attr{
		{Name: "is_cpu_op", Type: BoolVal, Ints: []int64{0}},
		{Name: "num_ops", Type: Int64Val, Ints: []int64{600_000_000_000}},
		{Name: "tensor_size", Type: Uint64Val, Ints: []int64{64 << 20}},
	}
	if !reflect.DeepEqual(f.Attrs, wantAttrs) {
		t.Errorf("node 1 attrs %+v", f.Attrs)
	}
	if n := tr.Nodes[4]; !reflect.DeepEqual(n.CtrlDeps, []uint64{1}) || !reflect.DeepEqual(n.DataDeps, []uint64{3}) || n.DurationMicros != 3000 {
		t.Errorf("node 4 %+v", n)
	}
	a2a := tr.Nodes[2]
	if a2a.Type != CommCollNode || a2a.Attr("comm_type").Ints[0] != int64(AllToAll) || a2a.Attr("comm_size").Ints[0] != 4<<20 {
		t.Errorf("node 2 %+v", a2a)
	}
	if s, _ := a2a.Attr("pg_name").String(); s != "1" {
		t.Errorf("node 2 pg_name %q", s)
	}
	if n := tr.Nodes[9]; !reflect.DeepEqual(n.DataDeps, []uint64{5, 7}) || n.DurationMicros != 500 {
		t.Errorf("node 9 %+v", n)
	}
	if n := tr.Nodes[10]; n.DurationMicros != 0 || n.Name != "zero_grad" {
		t.Errorf("node 10 %+v", n)
	}
	send := tr.Nodes[8]
	wantSend := []Attr{{Name: "is_cpu_op", Type: BoolVal, Ints: []int64{0}}, {Name: "comm_size", Type: Int64Val, Ints: []int64{1 << 20}},
		{Name: "comm_src", Type: Int32Val, Ints: []int64{0}}, {Name: "comm_dst", Type: Int32Val, Ints: []int64{8}}, {Name: "comm_tag", Type: Int32Val, Ints: []int64{7}}}
	if send.Type != CommSendNode || !reflect.DeepEqual(send.Attrs, wantSend) {
		t.Errorf("node 8 %+v", send)
	}
	recv := readFixture(t, "testdata/dp16.8.et").Nodes[8]
	if recv.Type != CommRecvNode || recv.Attr("comm_src").Ints[0] != 0 || recv.Attr("comm_dst").Ints[0] != 8 {
		t.Errorf("rank 8 node 8 %+v", recv)
	}
	if s, _ := readFixture(t, "testdata/dp16.9.et").Nodes[2].Attr("pg_name").String(); s != "2" {
		t.Errorf("rank 9's all-to-all in pg %q, want 2", s)
	}
}

// TestDecodeGzip: the gzip variant decodes to the same trace as the plain file.
func TestDecodeGzip(t *testing.T) {
	for _, r := range []string{"0", "13"} {
		plain := readFixture(t, "testdata/dp16."+r+".et")
		gz := readFixture(t, "testdata/dp16-gz."+r+".et.gz")
		gz.File = plain.File
		if !reflect.DeepEqual(plain, gz) {
			t.Errorf("rank %s: gzip variant decodes differently", r)
		}
	}
}

// TestEncodeByHand: a small node encoded as the protobuf encoding guide (Message Structure,
// Packed Repeated Fields) says a proto3 serializer writes it, byte by byte.
func TestEncodeByHand(t *testing.T) {
	tr := &Trace{Metadata: Metadata{Version: "0.0.4"}, Nodes: []Node{{ID: 3, Name: "ar", Type: CommCollNode,
		DataDeps: []uint64{1, 300}, Attrs: []Attr{{Name: "is_cpu_op", Type: BoolVal, Ints: []int64{0}}, {Name: "comm_size", Type: Int64Val, Ints: []int64{1 << 20}}}}}}
	want := []byte{
		7,                                // record length
		0x0a, 5, '0', '.', '0', '.', '4', // GlobalMetadata.version (1, LEN)
		46,      // record length
		0x08, 3, // id (1, VARINT) = 3
		0x12, 2, 'a', 'r', // name (2, LEN)
		0x18, 7, // type (3, VARINT) = COMM_COLL_NODE
		0x2a, 3, 1, 0xac, 0x02, // data_deps (5, LEN) packed: 1, 300 = 0xac 0x02
		0x52, 14, 0x0a, 9, 'i', 's', '_', 'c', 'p', 'u', '_', 'o', 'p', 0xd8, 0x01, 0, // attr (10): name, bool_val (27 -> tag 0xd8 0x01) = 0
		0x52, 15, 0x0a, 9, 'c', 'o', 'm', 'm', '_', 's', 'i', 'z', 'e', 0x48, 0x80, 0x80, 0x40, // attr: name, int64_val (9 -> 0x48) = 2^20
	}
	got := Encode(tr)
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode:\n got % x\nwant % x", got, want)
	}
	back, err := Decode(want, "hand.et")
	if err != nil {
		t.Fatal(err)
	}
	back.File = ""
	if !reflect.DeepEqual(back.Nodes[0].Attrs, tr.Nodes[0].Attrs) || !reflect.DeepEqual(back.Nodes[0].DataDeps, tr.Nodes[0].DataDeps) {
		t.Errorf("decoded %+v", back.Nodes[0])
	}
}

// TestDecodeUnpackedAndUnknown: repeated numbers written one per field (not packed) read the
// same, and unknown fields (a newer schema's) are skipped, as proto3 readers must.
func TestDecodeUnpackedAndUnknown(t *testing.T) {
	rec := []byte{
		0x08, 9, // id 9
		0x28, 4, 0x28, 5, // data_deps 4, data_deps 5 (unpacked)
		0x18, 4, // COMP_NODE
		0xa0, 0x01, 42, // field 20, varint: unknown, skipped
		0x38, 10, // duration_micros 10
		0x52, 12, 0x0a, 4, 'l', 'i', 's', 't', 0x42, 4, 0x08, 1, 0x08, 0x7f, // attr "list": int32_list, values 1 and 127 unpacked
	}
	stream := append([]byte{2, 0x0a, 0}, byte(len(rec)))
	stream = append(stream, rec...)
	tr, err := Decode(stream, "u.et")
	if err != nil {
		t.Fatal(err)
	}
	n := tr.Nodes[0]
	if n.ID != 9 || !reflect.DeepEqual(n.DataDeps, []uint64{4, 5}) || n.Type != CompNode || n.DurationMicros != 10 {
		t.Errorf("%+v", n)
	}
	if a := n.Attr("list"); a == nil || a.Type != Int32List || !reflect.DeepEqual(a.Ints, []int64{1, 127}) {
		t.Errorf("attr %+v", a)
	}
	// Records of length 0 are empty messages (Chakra's C++ reader): an empty GlobalMetadata and
	// an empty node (id 0, INVALID_NODE, which Build rejects).
	tr, err = Decode([]byte{0, 0}, "e.et")
	if err != nil || len(tr.Nodes) != 1 || tr.Nodes[0].Type != InvalidNode || tr.Nodes[0].Offset != 1 {
		t.Errorf("%+v, %v", tr, err)
	}
}

// TestDecodeErrors: every corrupt or malformed file is one Error naming the file, the record
// and, once read, the node and field.
func TestDecodeErrors(t *testing.T) {
	good, err := os.ReadFile("testdata/dp16.0.et")
	if err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile("testdata/dp16-gz.0.et.gz")
	if err != nil {
		t.Fatal(err)
	}
	node := func(body ...byte) []byte { // a metadata record, then one node record
		return append([]byte{2, 0x0a, 0, byte(len(body))}, body...)
	}
	for _, c := range []struct {
		name string
		data []byte
		want []string
	}{
		{"empty file", nil, []string{"x.et: empty: no GlobalMetadata record"}},
		{"truncated", good[:len(good)-5], []string{"x.et: node record 10 at byte", "record length: 67 bytes, but only 62 are left in the file: truncated"}},
		{"bad length varint", []byte{0xff, 0xff}, []string{"x.et: byte 0: record length: unexpected EOF"}},
		{"length over varint32", []byte{0x80, 0x80, 0x80, 0x80, 0x10}, []string{"x.et: byte 0: record length: 4294967296 does not fit a varint32"}},
		{"not a Chakra file", []byte("hello, world\n"), []string{"x.et: byte 0: record length: 104 bytes, but only 12 are left"}},
		{"wrong wire type", node(0x08, 5, 0x1a, 1, 'x'), []string{"x.et: node 5 (record 0, byte 3): type: length-delimited, want varint"}},
		{"bad tag", node(0x08, 5, 0x00), []string{"x.et: node 5 (record 0, byte 3): tag: invalid field number"}},
		{"truncated field", node(0x12, 10, 'a', 'b'), []string{"x.et: node record 0 at byte 3: name: unexpected EOF"}},
		{"bad attr value", node(0x08, 7, 0x52, 5, 0x0a, 1, 'a', 0x48, 0x80), []string{"x.et: node 7 (record 0, byte 3): attr[0] (a).int64_val: unexpected EOF"}},
		{"attr wire type", node(0x08, 7, 0x52, 6, 0x0a, 1, 'a', 0xe8, 0x01, 0x01), []string{"x.et: node 7 (record 0, byte 3): attr[0] (a).string_val: varint, want length-delimited"}},
		{"corrupt gzip", gz[:len(gz)-20], []string{"x.et: gzip stream is corrupt or truncated"}},
		{"gzip magic only", []byte{0x1f, 0x8b, 0, 0}, []string{"x.et: starts with the gzip magic but is not gzip"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data, "x.et")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			if _, ok := err.(*Error); !ok {
				t.Errorf("%T, want *Error", err)
			}
		})
	}
}

// FuzzDecode: no input panics the decoder; every error starts with the file name; whatever
// decodes re-encodes to a stream that decodes to the same trace.
func FuzzDecode(f *testing.F) {
	for _, p := range []string{"testdata/dp16.0.et", "testdata/dp16.8.et", "testdata/dp16-gz.3.et.gz"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(Encode(&Trace{Metadata: Metadata{Version: "v"}, Nodes: []Node{{ID: 1, Type: CompNode, Attrs: []Attr{
		{Name: "d", Type: DoubleList, Floats: []float64{1.5, -2}}, {Name: "s", Type: StringList, Strings: []string{"a", ""}},
		{Name: "z", Type: Sint64Val, Ints: []int64{-3}}, {Name: "f", Type: Fixed32List, Ints: []int64{7}}}}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Parse(data, "fuzz.et")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.et: ") {
				t.Fatalf("error does not start with the file name: %v", err)
			}
			return
		}
		again, err := Decode(Encode(tr), "fuzz.et")
		if err != nil {
			t.Fatalf("re-encoded trace does not decode: %v", err)
		}
		for i := range tr.Nodes {
			tr.Nodes[i].Offset, again.Nodes[i].Offset = 0, 0
		}
		if !reflect.DeepEqual(normalize(tr), normalize(again)) {
			t.Fatalf("round trip differs:\n%+v\n%+v", tr, again)
		}
	})
}

// normalize makes empty and nil slices equal for comparison (the decoder leaves a list
// attribute with no values nil), and NaN floats comparable.
func normalize(t *Trace) *Trace {
	fix := func(as []Attr) {
		for i := range as {
			a := &as[i]
			if len(a.Ints) == 0 {
				a.Ints = nil
			}
			if len(a.Floats) == 0 {
				a.Floats = nil
			}
			if len(a.Strings) == 0 {
				a.Strings = nil
			}
			for j, x := range a.Floats {
				if x != x {
					a.Floats[j] = 0
				}
			}
		}
	}
	fix(t.Metadata.Attrs)
	for i := range t.Nodes {
		fix(t.Nodes[i].Attrs)
	}
	return t
}
