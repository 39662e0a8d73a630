// Package report renders fabricsim results as a self-contained HTML page: hand-written SVG
// charts (stacked bars, line and step charts), tables and text, with no external assets, no
// fonts or scripts fetched from anywhere, so the file opens offline and can be mailed around.
//
// The page carries one small inline script that counts the charts that drew at least one
// data mark and are not flagged empty (every value zero), and writes the count into the DOM (element #fabricsim-charts, attribute
// data-charts), so that a headless browser can check the page rendered.
package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Page is one HTML report.
type Page struct {
	Title    string
	Subtitle string
	Sections []Section
}

// Section is a heading with optional text, chart, tables and preformatted text.
type Section struct {
	Title  string
	Text   []string // paragraphs (plain text)
	Charts []Chart
	Tables []*Table
	Pre    string // preformatted text (YAML, notes)
}

// Chart is anything that draws itself as an SVG element.
type Chart interface {
	SVG() string
}

// Table is a plain table; Caption is shown above it.
type Table struct {
	Caption string
	Head    []string
	Rows    [][]string
	// RightAlign marks columns holding numbers.
	RightAlign []bool
	// Highlight marks rows to draw the eye to (values that differ between columns).
	Highlight []bool
}

// Palette is the colour sequence of series and stacks (colour-blind-safe Okabe-Ito order).
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"}

func color(i int) string { return Palette[i%len(Palette)] }

const css = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.8em}
.sub{color:#555;margin-top:0}table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{border:1px solid #ddd;padding:.25em .6em;vertical-align:top}th{background:#f4f4f4;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}caption{text-align:left;font-weight:600;padding:.3em 0}
pre{background:#f7f7f7;border:1px solid #e5e5e5;padding:.6em;overflow-x:auto;font-size:.85em}
svg.chart{display:block;margin:.6em 0;max-width:100%;height:auto}svg text{font-family:inherit}
.charts{display:flex;flex-wrap:wrap;gap:1em}tr.hl td{background:#fff3c4}`

// check counts the charts with at least one data mark and records it for headless checks.
const check = `(function(){var n=0;document.querySelectorAll('svg.chart').forEach(function(s){if(s.getAttribute('data-empty')!=='true'&&s.querySelector('.mark'))n++;});
var d=document.getElementById('fabricsim-charts');d.setAttribute('data-charts',String(n));d.textContent=n+' charts rendered';})();`

// Write renders the page.
func (p *Page) Write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>%s</style></head><body>\n", esc(p.Title), css)
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(p.Title))
	if p.Subtitle != "" {
		fmt.Fprintf(&b, "<p class=\"sub\">%s</p>\n", esc(p.Subtitle))
	}
	for _, s := range p.Sections {
		fmt.Fprintf(&b, "<h2>%s</h2>\n", esc(s.Title))
		for _, t := range s.Text {
			fmt.Fprintf(&b, "<p>%s</p>\n", esc(t))
		}
		if len(s.Charts) > 0 {
			b.WriteString("<div class=\"charts\">\n")
			for _, c := range s.Charts {
				b.WriteString(c.SVG())
				b.WriteString("\n")
			}
			b.WriteString("</div>\n")
		}
		for _, t := range s.Tables {
			b.WriteString(t.HTML())
		}
		if s.Pre != "" {
			fmt.Fprintf(&b, "<pre>%s</pre>\n", esc(s.Pre))
		}
	}
	b.WriteString("<p id=\"fabricsim-charts\" data-charts=\"\" style=\"color:#888;font-size:.8em\"></p>\n")
	fmt.Fprintf(&b, "<script>%s</script>\n</body></html>\n", check)
	_, err := io.WriteString(w, b.String())
	return err
}

// HTML renders the table.
func (t *Table) HTML() string {
	var b strings.Builder
	b.WriteString("<table>")
	if t.Caption != "" {
		fmt.Fprintf(&b, "<caption>%s</caption>", esc(t.Caption))
	}
	b.WriteString("<thead><tr>")
	for _, h := range t.Head {
		fmt.Fprintf(&b, "<th>%s</th>", esc(h))
	}
	b.WriteString("</tr></thead><tbody>\n")
	for ri, r := range t.Rows {
		if ri < len(t.Highlight) && t.Highlight[ri] {
			b.WriteString("<tr class=\"hl\">")
		} else {
			b.WriteString("<tr>")
		}
		for i, c := range r {
			if i < len(t.RightAlign) && t.RightAlign[i] {
				fmt.Fprintf(&b, "<td class=\"num\">%s</td>", esc(c))
			} else {
				fmt.Fprintf(&b, "<td>%s</td>", esc(c))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
	return b.String()
}

func esc(s string) string { return html.EscapeString(s) }

// Format turns an axis or label value into text.
type Format func(float64) string

// Plain prints a value with up to 3 significant digits.
func Plain(x float64) string { return trimZeros(fmt.Sprintf("%.3g", x)) }

func trimZeros(s string) string {
	if strings.ContainsAny(s, "e") || !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// niceTicks returns about n round tick values from at or below lo to at or above hi.
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for i := math.Floor(lo/step + 1e-9); ; i++ {
		out = append(out, i*step+0) // +0 turns -0 into 0
		if i*step >= hi-step*1e-9 {
			break
		}
	}
	return out
}
