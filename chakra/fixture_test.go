package chakra

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the trace fixtures in testdata/ from their generators")

// The committed fixtures are made here, by Encode, and this test keeps them identical to what
// the generators produce (go test ./chakra -run Fixtures -update rewrites them). Encode's output
// is checked against files written by Chakra's own Python tools in TestEncodeMatchesChakra.

// Attribute constructors in the types Chakra's converter writes (pytorch_converter.py
// @21585d8f2d65: comm_type, comm_size int64_val; is_cpu_op bool_val; pg_name string_val) and
// ASTRA-sim reads (comm_src, comm_dst, comm_tag int32_val).
func i64(name string, v int64) Attr { return Attr{Name: name, Type: Int64Val, Ints: []int64{v}} }
func i32(name string, v int32) Attr { return Attr{Name: name, Type: Int32Val, Ints: []int64{int64(v)}} }
func u64(name string, v uint64) Attr {
	return Attr{Name: name, Type: Uint64Val, Ints: []int64{int64(v)}}
}
func str(name, v string) Attr { return Attr{Name: name, Type: StringVal, Strings: []string{v}} }
func flag1(name string, v bool) Attr {
	a := Attr{Name: name, Type: BoolVal, Ints: []int64{0}}
	if v {
		a.Ints[0] = 1
	}
	return a
}

const mib = 1 << 20

// dp16 is the fixture testdata/dp16.<rank>.et: one training step of a small data-parallel job
// on 16 ranks (two servers of 8 GPUs), with an expert all-to-all in two 8-rank process groups,
// two gradient-bucket all-reduces over all ranks and a point-to-point message from each rank of
// the first server to its peer on the second. Node ids follow program order, as the PyTorch
// converter's do. Per rank r:
//
//	0 METADATA_NODE "## process_group:init ##": groups "0" (all), "1" (even ranks), "2" (odd)
//	1 COMP_NODE fwd layers 0-3, 1500 us                       data_deps [0]
//	2 COMM_COLL_NODE ALL_TO_ALL 4 MiB, pg "1" or "2"          data_deps [1]
//	3 COMP_NODE fwd layers 4-7, 1500 us                       data_deps [2]
//	4 COMP_NODE bwd layers 7-4, 3000 us                       data_deps [3], ctrl_deps [1]
//	5 COMM_COLL_NODE ALL_REDUCE 8 MiB (bucket 0), pg "0"      data_deps [4]
//	6 COMP_NODE bwd layers 3-0, 3000 us                       data_deps [4]
//	7 COMM_COLL_NODE ALL_REDUCE 4 MiB (bucket 1), pg "0"      data_deps [6]
//	8 COMM_SEND_NODE to r+8 (r < 8) or COMM_RECV_NODE from r-8, 1 MiB, tag 7   data_deps [6]
//	9 COMP_NODE optimizer step, 500 us                        data_deps [5, 7]
//	10 COMP_NODE zero_grad, 0 us                              data_deps [9]
func dp16() []*Trace {
	const n = 16
	var evens, odds []string
	for r := 0; r < n; r += 2 {
		evens, odds = append(evens, fmt.Sprint(r)), append(odds, fmt.Sprint(r+1))
	}
	pgs := fmt.Sprintf(`['[{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 16, "ranks": []}, `+
		`{"pg_name": "1", "pg_desc": "experts_even", "backend_config": "cuda:nccl", "pg_size": 8, "ranks": [%s]}, `+
		`{"pg_name": "2", "pg_desc": "experts_odd", "backend_config": "cuda:nccl", "pg_size": 8, "ranks": [%s]}]']`,
		strings.Join(evens, ", "), strings.Join(odds, ", "))
	var out []*Trace
	for r := range n {
		gpu := flag1("is_cpu_op", false)
		comp := func(id uint64, name string, us uint64, deps ...uint64) Node {
			return Node{ID: id, Name: name, Type: CompNode, DataDeps: deps, DurationMicros: us,
				Attrs: []Attr{gpu, i64("num_ops", int64(us)*400_000_000), u64("tensor_size", 64*mib)}}
		}
		coll := func(id uint64, name string, ct CollectiveType, size int64, pg string, deps ...uint64) Node {
			return Node{ID: id, Name: name, Type: CommCollNode, DataDeps: deps,
				Attrs: []Attr{gpu, i64("comm_type", int64(ct)), i64("comm_size", size), str("pg_name", pg)}}
		}
		expertPG := "1"
		if r%2 == 1 {
			expertPG = "2"
		}
		fwd0 := comp(1, "fwd layers 0-3", 1500, 0)
		fwd0.Inputs = &IOInfo{Values: "[[100, 101, 0, 4194304, 2, 'cuda:0']]", Shapes: "[[4, 1024, 1024]]", Types: "['Tensor(c10::BFloat16)']"}
		fwd0.Outputs = &IOInfo{Values: "[[102, 103, 0, 4194304, 2, 'cuda:0']]", Shapes: "[[4, 1024, 1024]]", Types: "['Tensor(c10::BFloat16)']"}
		bwd1 := comp(4, "bwd layers 7-4", 3000, 3)
		bwd1.CtrlDeps = []uint64{1}
		p2p := Node{ID: 8, DataDeps: []uint64{6}}
		if r < n/2 {
			p2p.Name, p2p.Type = "ncclDevKernel_SendRecv (send)", CommSendNode
			p2p.Attrs = []Attr{gpu, i64("comm_size", mib), i32("comm_src", int32(r)), i32("comm_dst", int32(r+n/2)), i32("comm_tag", 7)}
		} else {
			p2p.Name, p2p.Type = "ncclDevKernel_SendRecv (recv)", CommRecvNode
			p2p.Attrs = []Attr{gpu, i64("comm_size", mib), i32("comm_src", int32(r-n/2)), i32("comm_dst", int32(r)), i32("comm_tag", 7)}
		}
		t := &Trace{
			Metadata: Metadata{Version: "0.0.4", Attrs: []Attr{str("generator", "fabricsim chakra/fixture_test.go dp16"), u64("rank", uint64(r))}},
			Nodes: []Node{
				{ID: 0, Name: "## process_group:init ##", Type: MetadataNode, Inputs: &IOInfo{Values: pgs, Shapes: "[[]]", Types: "['String']"}},
				fwd0,
				coll(2, "ncclDevKernel_AllToAll (expert dispatch)", AllToAll, 4*mib, expertPG, 1),
				comp(3, "fwd layers 4-7", 1500, 2),
				bwd1,
				coll(5, "ncclDevKernel_AllReduce (gradient bucket 0)", AllReduce, 8*mib, "0", 4),
				comp(6, "bwd layers 3-0", 3000, 4),
				coll(7, "ncclDevKernel_AllReduce (gradient bucket 1)", AllReduce, 4*mib, "0", 6),
				p2p,
				comp(9, "optimizer step", 500, 5, 7),
				comp(10, "zero_grad", 0, 9),
			},
		}
		out = append(out, t)
	}
	return out
}

// fixtures are the committed trace sets: name -> generator.
var fixtures = map[string]func() []*Trace{"dp16": dp16}

// TestFixtures: the committed fixtures are what their generators write, byte for byte; the
// gzip variant (testdata/dp16-gz.<rank>.et.gz) holds the same bytes compressed.
func TestFixtures(t *testing.T) {
	for name, gen := range fixtures {
		for r, tr := range gen() {
			want := Encode(tr)
			path := filepath.Join("testdata", fmt.Sprintf("%s.%d.et", name, r))
			gzPath := filepath.Join("testdata", fmt.Sprintf("%s-gz.%d.et.gz", name, r))
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				zw := gzip.NewWriter(&b) // no name, no time: the same bytes every run
				zw.Write(want)
				zw.Close()
				if err := os.WriteFile(gzPath, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from its generator (go test ./chakra -run Fixtures -update)", path)
			}
			gz, err := os.ReadFile(gzPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(gz, gzipMagic) {
				t.Errorf("%s is not gzip", gzPath)
			}
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			if err != nil {
				t.Fatal(err)
			}
			var plain bytes.Buffer
			if _, err := plain.ReadFrom(zr); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(plain.Bytes(), want) {
				t.Errorf("%s does not hold %s", gzPath, path)
			}
		}
	}
}
