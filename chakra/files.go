package chakra

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// RankFiles finds the trace files of a job: one per rank, named <prefix>.<rank>.et (ASTRA-sim's
// Workload reads "<prefix>.<rank>.et", astra-sim/workload/Workload.cc @518bd513ae11), or
// <prefix>.<rank>.et.gz, which Chakra's writer compresses by its name (protoio.cc
// ProtoOutputStream). The ranks must run from 0 without a gap: a missing one is an Error naming
// the file that should be there.
func RankFiles(prefix string) ([]string, error) {
	dir, base := filepath.Split(prefix)
	if base == "" {
		return nil, &Error{File: prefix, Offset: -1, Record: -1, Msg: "want a path prefix such as traces/step (the files traces/step.0.et, traces/step.1.et, ...), not a directory"}
	}
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err
		}
		return nil, &Error{File: prefix, Offset: -1, Record: -1, Msg: fmt.Sprintf("cannot list %s: %v", dir, err)}
	}
	byRank := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, base+".")
		if !ok {
			continue
		}
		num, ok := strings.CutSuffix(rest, ".et")
		if !ok {
			if num, ok = strings.CutSuffix(rest, ".et.gz"); !ok {
				continue
			}
		}
		r, err := strconv.Atoi(num)
		if err != nil || r < 0 || strconv.Itoa(r) != num {
			continue // not <prefix>.<rank>.et: another trace's file, or <prefix>.x.y.et
		}
		path := filepath.Join(filepath.Dir(prefix), name)
		if other, dup := byRank[r]; dup {
			return nil, &Error{File: path, Offset: -1, Record: -1, Msg: fmt.Sprintf("rank %d has two files, this and %s: keep one", r, other)}
		}
		byRank[r] = path
	}
	if len(byRank) == 0 {
		return nil, &Error{File: prefix, Offset: -1, Record: -1, Msg: fmt.Sprintf("no trace files %s.<rank>.et in %s (one Chakra ET file per rank, ranks from 0)", base, dir)}
	}
	last := 0
	for r := range byRank {
		last = max(last, r)
	}
	files := make([]string, last+1)
	for r := range files {
		p, ok := byRank[r]
		if !ok {
			return nil, &Error{File: fmt.Sprintf("%s.%d.et", prefix, r), Offset: -1, Record: -1,
				Msg: fmt.Sprintf("missing: the trace has files for ranks up to %d, so every rank 0..%d needs one", last, last)}
		}
		files[r] = p
	}
	return files, nil
}

// ReadCommGroups reads an ASTRA-sim communicator-group file: a JSON object from process-group
// id to its ranks, {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]} (Workload::initialize_comm_groups,
// astra-sim/workload/Workload.cc @518bd513ae11). ranks is the job's size, for checking.
func ReadCommGroups(path string, ranks int) (map[string][]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err
		}
		return nil, &Error{File: path, Offset: -1, Record: -1, Msg: "cannot read the communicator groups: " + err.Error()}
	}
	var raw map[string][]int
	if err := json.Unmarshal(data, &raw); err != nil {
		msg := err.Error()
		if se, ok := err.(*json.SyntaxError); ok {
			msg = fmt.Sprintf("byte %d: %v", se.Offset, err)
		}
		return nil, &Error{File: path, Offset: -1, Record: -1, Msg: "not a communicator-group file (want JSON {\"<pg id>\": [ranks], ...}): " + msg}
	}
	out := map[string][]int{}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, err := strconv.Atoi(k); err != nil {
			return nil, &Error{File: path, Offset: -1, Record: -1, Field: k, Msg: "a process-group id must be a whole number (ASTRA-sim reads it with stoi)"}
		}
		g, err := checkGroup(raw[k], ranks)
		if err != nil {
			return nil, &Error{File: path, Offset: -1, Record: -1, Field: k, Msg: err.Error()}
		}
		if isDefaultGroup(k) && len(g) != ranks {
			return nil, &Error{File: path, Offset: -1, Record: -1, Field: k, Msg: fmt.Sprintf("process group 0 is the default group of all %d ranks (ASTRA-sim's convention); give the group another id", ranks)}
		}
		out[k] = g
	}
	return out, nil
}

// isDefaultGroup: an empty pg_name or "0" is the group of all ranks (Workload::extract_comm_group,
// astra-sim/workload/Workload.cc @518bd513ae11).
func isDefaultGroup(pg string) bool { return pg == "" || pg == "0" }

// checkGroup sorts a group's ranks and checks they are distinct and within the job; an empty
// list is every rank (Workload::issue_pytorch_pg_metadata).
func checkGroup(ranks []int, n int) ([]int, error) {
	if len(ranks) == 0 {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	g := append([]int(nil), ranks...)
	sort.Ints(g)
	for i, r := range g {
		if r < 0 || r >= n {
			return nil, fmt.Errorf("rank %d is outside the job's ranks 0..%d", r, n-1)
		}
		if i > 0 && g[i-1] == r {
			return nil, fmt.Errorf("rank %d listed twice", r)
		}
	}
	return g, nil
}

// pytorchGroups reads the process groups a METADATA_NODE carries: PyTorch's process-group
// configuration as the converter prints it into inputs.values, a Python list holding one JSON
// string, "['[{\"pg_name\": \"0\", \"ranks\": [0, 1], ...}]']". ASTRA-sim strips the two
// characters at each end and parses the JSON (Workload::issue_pytorch_pg_metadata,
// @518bd513ae11); so does this. ok is false when the node carries no such list.
func pytorchGroups(n *Node) (groups map[string][]int, ok bool, err error) {
	if n.Inputs == nil || !strings.Contains(n.Inputs.Values, "pg_name") {
		return nil, false, nil
	}
	v := n.Inputs.Values
	if len(v) < 4 {
		return nil, false, nil
	}
	var items []struct {
		PGName *string `json:"pg_name"`
		Ranks  []int   `json:"ranks"`
	}
	if err := json.Unmarshal([]byte(v[2:len(v)-2]), &items); err != nil {
		return nil, true, fmt.Errorf("inputs.values mentions pg_name but is not PyTorch's process-group list ['[{\"pg_name\": ..., \"ranks\": [...]}, ...]']: %v", err)
	}
	groups = map[string][]int{}
	for i, it := range items {
		if it.PGName == nil {
			return nil, true, fmt.Errorf("inputs.values: process group %d has no pg_name", i)
		}
		groups[*it.PGName] = it.Ranks
	}
	return groups, true, nil
}
