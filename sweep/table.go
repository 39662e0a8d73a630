package sweep

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// A Table is the results of a sweep: one row per run with a committed record, sorted by run
// ID, so that the same records always give the same bytes.
type Table struct {
	// Axes and Metrics name the axis and metric columns.
	Axes, Metrics []string
	Rows          []Row
	// Missing lists the runs that have no record yet.
	Missing []string
}

// A Row is one run's results.
type Row struct {
	RunID string
	Axes  []string
	Seed  int64
	// Metrics holds one value per metric column; Has says which the run reported.
	Metrics []float64
	Has     []bool
	// WallSeconds is the host time the run took: in timing.csv, not in the results table,
	// whose bytes depend only on the sweep.
	WallSeconds float64
	Status      string
	Error       string
}

// Columns lists the table's columns in order.
func (t *Table) Columns() []string {
	cols := append([]string{"run_id"}, t.Axes...)
	cols = append(cols, "seed")
	cols = append(cols, t.Metrics...)
	return append(cols, "status", "error")
}

// Failed counts the rows whose run failed.
func (t *Table) Failed() int {
	n := 0
	for _, r := range t.Rows {
		if r.Status != StatusOK {
			n++
		}
	}
	return n
}

// Merge builds the results table of the runs (sorted by ID) from the records in DIR/runs.
// Records of runs that the sweep no longer has are left out.
func Merge(dir string, s *Sweep, runs []Run) *Table {
	t := &Table{Metrics: s.Metrics}
	for _, a := range s.Axes {
		t.Axes = append(t.Axes, a.Column)
	}
	for _, r := range runs {
		rec, ok := ReadRecord(dir, r.ID)
		if !ok {
			t.Missing = append(t.Missing, r.ID)
			continue
		}
		row := Row{RunID: r.ID, Axes: r.Labels, Seed: r.Seed, WallSeconds: rec.WallSeconds, Status: rec.Status, Error: rec.Error}
		for _, m := range s.Metrics {
			v, has := rec.Metrics[m]
			row.Metrics = append(row.Metrics, v)
			row.Has = append(row.Has, has)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// formatFloat prints v exactly (shortest round-trip form) without an exponent where a plain
// decimal stays short.
func formatFloat(v float64) string {
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// WriteCSV writes the table with a header; a metric a run did not report is an empty cell.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(t.Columns()); err != nil {
		return err
	}
	for _, r := range t.Rows {
		rec := append([]string{r.RunID}, r.Axes...)
		rec = append(rec, strconv.FormatInt(r.Seed, 10))
		for i, v := range r.Metrics {
			if r.Has[i] {
				rec = append(rec, formatFloat(v))
			} else {
				rec = append(rec, "")
			}
		}
		rec = append(rec, r.Status, r.Error)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// parquetType builds a struct type whose fields are the table's columns in order, so that
// parquet-go lays the columns out in that order (a parquet.Group would sort them by name).
func (t *Table) parquetType() reflect.Type {
	strT, optT, i64T := reflect.TypeOf(""), reflect.TypeOf((*float64)(nil)), reflect.TypeOf(int64(0))
	field := func(i int, name string, typ reflect.Type) reflect.StructField {
		return reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: typ, Tag: reflect.StructTag(fmt.Sprintf(`parquet:%q`, name))}
	}
	var fs []reflect.StructField
	fs = append(fs, field(len(fs), "run_id", strT))
	for _, a := range t.Axes {
		fs = append(fs, field(len(fs), a, strT))
	}
	fs = append(fs, field(len(fs), "seed", i64T))
	for _, m := range t.Metrics {
		fs = append(fs, field(len(fs), m+",optional", optT))
	}
	fs = append(fs, field(len(fs), "status", strT), field(len(fs)+1, "error", strT))
	return reflect.StructOf(fs)
}

// WriteParquet writes the table as one Parquet row group; a metric a run did not report is
// null.
func (t *Table) WriteParquet(w io.Writer) error {
	typ := t.parquetType()
	schema := parquet.SchemaOf(reflect.New(typ).Interface())
	pw := parquet.NewWriter(w, schema)
	for _, r := range t.Rows {
		v := reflect.New(typ).Elem()
		i := 0
		set := func(x any) {
			v.Field(i).Set(reflect.ValueOf(x))
			i++
		}
		set(r.RunID)
		for _, a := range r.Axes {
			set(a)
		}
		set(r.Seed)
		for j, m := range r.Metrics {
			if r.Has[j] {
				m := m
				set(&m)
			} else {
				i++
			}
		}
		set(r.Status)
		set(r.Error)
		if err := pw.Write(v.Addr().Interface()); err != nil {
			return err
		}
	}
	return pw.Close()
}

// WriteTimingCSV writes timing.csv: run_id,wall_seconds,status, one row per run in the
// table's order. Host times differ from run to run, so they are kept out of results.csv.
func (t *Table) WriteTimingCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"run_id", "wall_seconds", "status"}); err != nil {
		return err
	}
	for _, r := range t.Rows {
		if err := cw.Write([]string{r.RunID, strconv.FormatFloat(r.WallSeconds, 'f', 6, 64), r.Status}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteFiles commits DIR/results.csv, DIR/results.parquet and DIR/timing.csv.
func (t *Table) WriteFiles(dir string) error {
	var c, p, tm bytes.Buffer
	if err := t.WriteCSV(&c); err != nil {
		return err
	}
	if err := t.WriteParquet(&p); err != nil {
		return err
	}
	if err := t.WriteTimingCSV(&tm); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "results.csv"), c.Bytes()); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "results.parquet"), p.Bytes()); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "timing.csv"), tm.Bytes())
}
