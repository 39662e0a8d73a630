package flow

import (
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// The subnet manager's tables are reused for the same network and engine, and computed anew for
// another engine or once the graph's wiring changed in place (its fingerprint).
func TestSubnetTablesReuse(t *testing.T) {
	g, _ := fatTree(t, 4, 100*units.Gbps)
	a, err := subnetTables(g, "minhop")
	if err != nil {
		t.Fatal(err)
	}
	b, err := subnetTables(g, "minhop")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("the same network's tables were computed twice")
	}
	c, err := subnetTables(g, "dmodk")
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Error("another routing engine got the cached tables")
	}
	g.Links[0].Rate = 200 * units.Gbps
	d, err := subnetTables(g, "minhop")
	if err != nil {
		t.Fatal(err)
	}
	if d == a {
		t.Error("a graph changed in place got its old tables")
	}
}
