package report

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestStackedBarsMarks(t *testing.T) {
	c := &StackedBars{Title: "t <x>", Categories: []string{"a", "b"}, Series: []string{"s1", "s2", "s3"},
		Values: [][]float64{{1, 2}, {0, 3}, {4, -1}}}
	svg := c.SVG()
	// One rect per positive value: 1, 2, 3, 4 (zero and negative are not drawn).
	if n := strings.Count(svg, `class="mark"`); n != 4 {
		t.Errorf("%d marks, want 4", n)
	}
	if !strings.Contains(svg, "t &lt;x&gt;") || strings.Contains(svg, "t <x>") {
		t.Error("title not escaped")
	}
	// Totals are labelled: a = 1 + 4 = 5, b = 2 + 3 = 5.
	if strings.Count(svg, ">5</text>") != 2 {
		t.Errorf("totals not labelled:\n%s", svg)
	}
}

func TestLinesEmptyFlag(t *testing.T) {
	zero := &Lines{Title: "z", Series: []Series{{Name: "a", X: []float64{0, 1}, Y: []float64{0, 0}}}}
	if !strings.Contains(zero.SVG(), `data-empty="true"`) {
		t.Error("all-zero chart not flagged empty")
	}
	some := &Lines{Title: "s", Series: []Series{{Name: "a", X: []float64{0, 1, 2}, Y: []float64{0, 3, 1}}}, Step: true}
	svg := some.SVG()
	if strings.Contains(svg, `data-empty`) {
		t.Error("non-zero chart flagged empty")
	}
	// A step line of 3 points has 3 + 2 vertices.
	i := strings.Index(svg, `points="`)
	pts := strings.Fields(svg[i+8 : i+strings.Index(svg[i+8:], `"`)+8])
	if len(pts) != 5 {
		t.Errorf("%d vertices, want 5: %v", len(pts), pts)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
	}{{0, 10, []float64{0, 2.5, 5, 7.5, 10}}, {0, 1.4e-3, []float64{0, 5e-4, 1e-3, 1.5e-3}}} {
		got := niceTicks(c.lo, c.hi, 4)
		if len(got) != len(c.want) {
			t.Errorf("niceTicks(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
			continue
		}
		for i := range got {
			if d := got[i] - c.want[i]; d > 1e-12 || d < -1e-12 {
				t.Errorf("niceTicks(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
			}
		}
	}
}

func TestPageSelfContained(t *testing.T) {
	p := &Page{Title: "x", Sections: []Section{{Title: "s", Text: []string{"a & b"},
		Charts: []Chart{&StackedBars{Title: "b", Categories: []string{"c"}, Series: []string{"s"}, Values: [][]float64{{1}}}},
		Tables: []*Table{{Head: []string{"h"}, Rows: [][]string{{"<v>"}}}}, Pre: "k: v"}}}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"http://", "https://", "<link", "src="} {
		if strings.Contains(strings.ReplaceAll(out, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("page refers to an external resource (%q)", bad)
		}
	}
	for _, want := range []string{"a &amp; b", "&lt;v&gt;", `id="fabricsim-charts"`, "<script>"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestTableHighlight: highlighted rows carry the class the page's style colours, the others not.
func TestTableHighlight(t *testing.T) {
	tb := &Table{Head: []string{"key", "a", "b"}, Rows: [][]string{{"x", "1", "1"}, {"y", "1", "2"}}, Highlight: []bool{false, true}}
	h := tb.HTML()
	if strings.Count(h, `<tr class="hl">`) != 1 || !strings.Contains(h, `<tr class="hl"><td>y</td>`) {
		t.Errorf("highlight: %s", h)
	}
	if !strings.Contains(css, "tr.hl td{") {
		t.Error("no style for highlighted rows")
	}
}

// TestLinesOverlapShown: of three series, b is identical to a and c differs only where all
// are zero. Each line is drawn nested inside the one before (stroke widths strictly falling,
// so every colour stays visible where they coincide) and b's legend entry says it equals a.
func TestLinesOverlapShown(t *testing.T) {
	x := []float64{0, 1, 2, 3}
	c := &Lines{Title: "t", Step: true, Series: []Series{
		{Name: "a", X: x, Y: []float64{0, 2, 0, 0}},
		{Name: "b", X: x, Y: []float64{0, 2, 0, 0}},
		{Name: "c", X: x, Y: []float64{0, 0, 0, 1}},
	}}
	svg := c.SVG()
	if !strings.Contains(svg, ">b = a</text>") || strings.Contains(svg, ">c = ") {
		t.Errorf("legend does not (only) say that b equals a:\n%s", svg)
	}
	var widths []float64
	for _, m := range regexp.MustCompile(`<polyline class="mark"[^>]* stroke-width="([0-9.]+)"`).FindAllStringSubmatch(svg, -1) {
		w, _ := strconv.ParseFloat(m[1], 64)
		widths = append(widths, w)
	}
	if len(widths) != 3 || !(widths[0] > widths[1] && widths[1] > widths[2]) {
		t.Errorf("stroke widths %v, want 3 strictly falling", widths)
	}
}

// A Points series is a scatter: one dot per point, no line, even on a step chart.
func TestLinesPoints(t *testing.T) {
	c := &Lines{Title: "p", Step: true, Series: []Series{{Name: "a", X: []float64{0, 1, 2}, Y: []float64{3, 1, 2}, Points: true}}}
	svg := c.SVG()
	if n := strings.Count(svg, `<circle class="mark"`); n != 3 {
		t.Errorf("%d dots, want 3", n)
	}
	if strings.Contains(svg, `<polyline class="mark"`) {
		t.Error("a scatter drew a line")
	}
}
