package report

import (
	"fmt"
	"math"
	"strings"
)

// Geometry shared by the charts (SVG user units; the SVG scales to the page width).
const (
	chartW  = 520
	chartH  = 300
	marginL = 70
	marginR = 16
	marginT = 34
	marginB = 54
)

// StackedBars draws one bar per category, stacked by series: Values[s][c] is series s of
// category c. Horizontal bars read better with long category names.
type StackedBars struct {
	Title      string
	Categories []string
	Series     []string
	Values     [][]float64
	Format     Format // value labels and the axis
	AxisLabel  string
}

// SVG implements Chart.
func (c *StackedBars) SVG() string {
	f := c.Format
	if f == nil {
		f = Plain
	}
	n := len(c.Categories)
	barH := 26.0
	legendH := 22.0 * math.Ceil(float64(len(c.Series))/float64(legendColumns(c.Series)))
	labelW := 130.0
	h := marginT + float64(n)*(barH+12) + 58 + legendH
	plotW := chartW - labelW - marginR - 10
	var maxV float64
	totals := make([]float64, n)
	for ci := 0; ci < n; ci++ {
		for si := range c.Series {
			if ci < len(c.Values[si]) && c.Values[si][ci] > 0 {
				totals[ci] += c.Values[si][ci]
			}
		}
		maxV = math.Max(maxV, totals[ci])
	}
	ticks := niceTicks(0, maxV, 4)
	top := ticks[len(ticks)-1]
	if top <= 0 {
		top = 1
	}
	x := func(v float64) float64 { return labelW + v/top*plotW }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %.0f" width="%d" role="img" aria-label="%s">`, chartW, h, chartW, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="600">%s</text>`, 4, esc(c.Title))
	axisY := marginT + float64(n)*(barH+12)
	for _, t := range ticks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, x(t), marginT-4, x(t), axisY)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle" fill="#555">%s</text>`, x(t), axisY+14, esc(f(t)))
	}
	if c.AxisLabel != "" {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="#333">%s</text>`, labelW+plotW/2, axisY+30, esc(c.AxisLabel))
	}
	for ci, cat := range c.Categories {
		y := marginT + float64(ci)*(barH+12)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end">%s</text>`, labelW-6, y+barH/2+4, esc(cat))
		acc := 0.0
		for si, name := range c.Series {
			if ci >= len(c.Values[si]) || c.Values[si][ci] <= 0 {
				continue
			}
			v := c.Values[si][ci]
			fmt.Fprintf(&b, `<rect class="mark" x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"><title>%s: %s = %s</title></rect>`,
				x(acc), y, x(acc+v)-x(acc), barH, color(si), esc(cat), esc(name), esc(f(v)))
			acc += v
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#333">%s</text>`, math.Min(x(acc)+4, chartW-60), y+barH/2+4, esc(f(totals[ci])))
	}
	legend(&b, c.Series, axisY+54, func(i int) string { return color(i) }, false)
	b.WriteString("</svg>")
	return b.String()
}

// Series is one line of a line chart.
type Series struct {
	Name string
	X, Y []float64
	Dash bool
	// Points draws a dot at each point and no line (a scatter).
	Points bool
}

// Lines draws series as polylines (or steps, for CDFs and binned timelines).
type Lines struct {
	Title          string
	XLabel, YLabel string
	Series         []Series
	XFormat        Format
	YFormat        Format
	Step           bool
	// YMin/YMax fix the y range when YMax > YMin.
	YMin, YMax float64
}

// SVG implements Chart.
func (c *Lines) SVG() string {
	xf, yf := c.XFormat, c.YFormat
	if xf == nil {
		xf = Plain
	}
	if yf == nil {
		yf = Plain
	}
	x0, x1 := math.Inf(1), math.Inf(-1)
	y0, y1 := math.Inf(1), math.Inf(-1)
	points := 0
	for _, s := range c.Series {
		for i := range s.X {
			x0, x1 = math.Min(x0, s.X[i]), math.Max(x1, s.X[i])
			y0, y1 = math.Min(y0, s.Y[i]), math.Max(y1, s.Y[i])
			points++
		}
	}
	if points == 0 {
		x0, x1, y0, y1 = 0, 1, 0, 1
	}
	if c.YMax > c.YMin {
		y0, y1 = c.YMin, c.YMax
	}
	y0 = math.Min(y0, 0)
	if x1 <= x0 {
		x0, x1 = x0-math.Max(1e-12, math.Abs(x0)*0.05), x1+math.Max(1e-12, math.Abs(x1)*0.05)
	}
	if y1 <= y0 {
		y1 = y0 + 1
	}
	xt, yt := niceTicks(x0, x1, 5), niceTicks(y0, y1, 4)
	x0, x1 = math.Min(x0, xt[0]), math.Max(x1, xt[len(xt)-1])
	y0, y1 = math.Min(y0, yt[0]), math.Max(y1, yt[len(yt)-1])
	var names []string
	for _, s := range c.Series {
		names = append(names, s.Name)
	}
	// Series identical to an earlier one say so in the legend ("b = a").
	sameAs := make([]int, len(c.Series))
	for si := range c.Series {
		sameAs[si] = -1
		for sj := 0; sj < si; sj++ {
			if sameSeries(c.Series[si], c.Series[sj]) {
				sameAs[si] = sj
				names[si] += " = " + c.Series[sj].Name
				break
			}
		}
	}
	legendH := 20.0 * math.Ceil(float64(len(names))/float64(legendColumns(names)))
	h := chartH + legendH
	pw, ph := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	X := func(v float64) float64 { return marginL + (v-x0)/(x1-x0)*pw }
	Y := func(v float64) float64 { return marginT + ph - (v-y0)/(y1-y0)*ph }
	// A chart whose every value is zero is drawn (the flat lines say so) but flagged empty.
	empty := ""
	if points == 0 || (y0 == 0 && allZero(c.Series)) {
		empty = ` data-empty="true"`
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart"%s xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %.0f" width="%d" role="img" aria-label="%s">`, empty, chartW, h, chartW, esc(c.Title))
	fmt.Fprintf(&b, `<text x="4" y="20" font-size="14" font-weight="600">%s</text>`, esc(c.Title))
	if empty != "" {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" fill="#888">none in this run</text>`, marginL+pw/2, marginT+ph/2)
	}
	for _, t := range yt {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, marginL, Y(t), marginL+pw, Y(t))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="10" text-anchor="end" fill="#555">%s</text>`, marginL-5, Y(t)+3, esc(yf(t)))
	}
	for _, t := range xt {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#f0f0f0"/>`, X(t), marginT, X(t), marginT+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle" fill="#555">%s</text>`, X(t), marginT+ph+14, esc(xf(t)))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`, marginL, marginT, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`, marginL+pw/2, marginT+ph+32, esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" font-size="11" text-anchor="middle">%s</text>`, marginT+ph/2, esc(c.YLabel))
	// Lines that coincide (identical series, or stretches where several are zero) would hide
	// one another: every line is drawn nested inside the one before, the first widest, so each
	// colour shows as a band.
	widths := nestedWidths(len(c.Series))
	for si, s := range c.Series {
		if len(s.X) == 0 {
			continue
		}
		if s.Points {
			for i := range s.X {
				fmt.Fprintf(&b, `<circle class="mark" cx="%.2f" cy="%.2f" r="2.5" fill="%s" fill-opacity="0.75"><title>%s</title></circle>`, X(s.X[i]), Y(s.Y[i]), color(si), esc(s.Name))
			}
			continue
		}
		var pts []string
		for i := range s.X {
			if c.Step && i > 0 {
				pts = append(pts, fmt.Sprintf("%.2f,%.2f", X(s.X[i]), Y(s.Y[i-1])))
			}
			pts = append(pts, fmt.Sprintf("%.2f,%.2f", X(s.X[i]), Y(s.Y[i])))
		}
		dash := ""
		if s.Dash {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(&b, `<polyline class="mark" fill="none" stroke="%s" stroke-width="%.2g"%s points="%s"><title>%s</title></polyline>`,
			color(si), widths[si], dash, strings.Join(pts, " "), esc(s.Name))
		if len(s.X) == 1 {
			fmt.Fprintf(&b, `<circle class="mark" cx="%.2f" cy="%.2f" r="%.2g" fill="%s"/>`, X(s.X[0]), Y(s.Y[0]), 1.5+widths[si]/2, color(si))
		}
	}
	legend(&b, names, chartH-4, func(i int) string { return color(i) }, true)
	b.WriteString("</svg>")
	return b.String()
}

// nestedWidths are the stroke widths of n lines drawn one inside the other: the last 1.5
// wide, each earlier one wider by up to 1.5, the first at most 9.
func nestedWidths(n int) []float64 {
	w := make([]float64, n)
	step := 1.5
	if n > 1 {
		step = min(step, 7.5/float64(n-1))
	}
	for i := range w {
		w[i] = 1.5 + step*float64(n-1-i)
	}
	return w
}

// sameSeries reports whether two series have the same points.
func sameSeries(a, b Series) bool {
	if len(a.X) != len(b.X) || len(a.Y) != len(b.Y) {
		return false
	}
	for i := range a.X {
		if a.X[i] != b.X[i] {
			return false
		}
	}
	for i := range a.Y {
		if a.Y[i] != b.Y[i] {
			return false
		}
	}
	return true
}

func allZero(ss []Series) bool {
	for _, s := range ss {
		for _, y := range s.Y {
			if y != 0 {
				return false
			}
		}
	}
	return true
}

// legendColumns is 3 columns of legend entries, or 2 when an entry is too long for a third of
// the chart's width.
func legendColumns(names []string) int {
	for _, n := range names {
		if len([]rune(n)) > 24 {
			return 2
		}
	}
	return 3
}

func legend(b *strings.Builder, names []string, y float64, col func(int) string, line bool) {
	cols := legendColumns(names)
	colW, maxLen := 170.0, 26
	if cols == 2 {
		colW, maxLen = 255.0, 40
	}
	for i, n := range names {
		lx := 10 + float64(i%cols)*colW
		ly := y + float64(i/cols)*20
		if line {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`, lx, ly-4, lx+18, ly-4, col(i))
		} else {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`, lx, ly-11, col(i))
		}
		label := n
		if r := []rune(label); len(r) > maxLen {
			label = string(r[:maxLen-1]) + "…"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11">%s</text>`, lx+24, ly, esc(label))
	}
}
