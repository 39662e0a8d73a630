package flow

import (
	"fmt"
	"reflect"
	"slices"
	"unsafe"

	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
)

// clone is a deep copy of an engine at a step boundary (between two iterations of engine.run):
// the copy and the original then run on independently and give the results each would have
// given alone (TestCloneMatchesPlain). It is the first half of forking a run (a scaled send's
// two sizes share their first steps: docs/flow.md, "Forking the two sizes' runs").
//
// The copy is made by walking the engine's types (reflect) so that a field added later is copied
// without a clone method to keep up to date, and it keeps the state's aliasing: every object
// reached (a pointee, a slice's backing array, a map) is copied once, and every pointer or slice
// into it, also into its middle (a slice of another, a pointer to a struct's field such as the
// network's and the ideal cache's *fabric.Config, which is the engine's own cfg), points into
// the copy at the same place. What the engine only reads and never writes is shared, not
// copied: the topology, the message graph, the routes (NextHopper) and the subnet manager's
// tables, and funcs (Options.Progress). A chan or an unsafe.Pointer in the state, or an
// interface holding a non-pointer value with pointers, panics: the walk does not know them.
// It also returns the bytes the copy allocated (the objects walked; maps counted by their
// entries' keys and values).
func (e *engine) clone() (*engine, int64) {
	c := newCloner()
	root := unsafe.Pointer(e)
	t := reflect.TypeFor[engine]()
	c.add(root, t, 1)
	c.scan(t, root)
	c.build()
	return (*engine)(c.translate(root)), c.bytes
}

// clonerShared are the types whose values the copy shares with the original (read-only state).
var clonerShared = map[reflect.Type]bool{
	reflect.TypeFor[*topo.Graph]():     true,
	reflect.TypeFor[*msggraph.Graph](): true,
	reflect.TypeFor[NextHopper]():      true,
	reflect.TypeFor[*ibsm.Tables]():    true,
}

// cblock is an object of the original reached by the walk: n values of type t from start.
type cblock struct {
	start, end uintptr
	src        unsafe.Pointer
	t          reflect.Type
	n          int
	// outer is the block that contains it (itself where none does), and dst its copy (outer
	// blocks only).
	outer *cblock
	dst   unsafe.Pointer
}

type cloner struct {
	seen   map[cblockKey]*cblock
	blocks []*cblock // outer blocks, by start, after build
	maps   map[unsafe.Pointer]reflect.Value
	plans  map[reflect.Type]*typePlan
	bytes  int64 // allocated by the copy
}

type cblockKey struct {
	start uintptr
	t     reflect.Type
	n     int
}

func newCloner() *cloner {
	return &cloner{seen: map[cblockKey]*cblock{}, maps: map[unsafe.Pointer]reflect.Value{}, plans: map[reflect.Type]*typePlan{}}
}

// typePlan is where a value of type t holds what the copy must translate: its pointers, slices,
// maps and interfaces (strings and funcs are shared as they are), at their offsets, struct
// fields and array elements flattened, so that walking a large array of structs reads no type
// information per element.
type typePlan struct {
	t    reflect.Type
	size uintptr
	ops  []walkOp
}

// walkOp is one word to translate: its offset, its type and kind, and for a pointer or a slice
// the plan of what it points to (set once built: a type may reach itself).
type walkOp struct {
	off  uintptr
	kind reflect.Kind
	t    reflect.Type
	elem *typePlan
}

// plan is t's typePlan.
func (c *cloner) plan(t reflect.Type) *typePlan {
	if p, ok := c.plans[t]; ok {
		return p
	}
	p := &typePlan{t: t, size: t.Size()}
	c.plans[t] = p
	c.flatten(p, t, 0)
	return p
}

func (c *cloner) flatten(p *typePlan, t reflect.Type, off uintptr) {
	if clonerShared[t] {
		return
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		if t.Elem().Size() == 0 {
			return
		}
		op := walkOp{off: off, kind: t.Kind(), t: t}
		op.elem = c.plan(t.Elem())
		p.ops = append(p.ops, op)
	case reflect.Map, reflect.Interface:
		p.ops = append(p.ops, walkOp{off: off, kind: t.Kind(), t: t})
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			c.flatten(p, f.Type, off+f.Offset)
		}
	case reflect.Array:
		for i := range t.Len() {
			c.flatten(p, t.Elem(), off+uintptr(i)*t.Elem().Size())
		}
	case reflect.Chan, reflect.UnsafePointer:
		panic(fmt.Sprintf("flow: clone: cannot copy a %v", t))
	}
}

// add registers n values of t at p, reporting whether they are new to the walk.
func (c *cloner) add(p unsafe.Pointer, t reflect.Type, n int) bool {
	k := cblockKey{uintptr(p), t, n}
	if c.seen[k] != nil {
		return false
	}
	c.seen[k] = &cblock{start: uintptr(p), src: p, end: uintptr(p) + t.Size()*uintptr(n), t: t, n: n}
	return true
}

// sliceHeader is a slice's representation (reflect.SliceHeader with a pointer the collector sees).
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// scan walks the value of type t at p, registering every object it reaches.
func (c *cloner) scan(t reflect.Type, p unsafe.Pointer) { c.scanPlan(c.plan(t), p) }

func (c *cloner) scanPlan(pl *typePlan, p unsafe.Pointer) {
	for i := range pl.ops {
		op := &pl.ops[i]
		w := unsafe.Add(p, op.off)
		switch op.kind {
		case reflect.Pointer:
			if q := *(*unsafe.Pointer)(w); q != nil && c.add(q, op.elem.t, 1) {
				c.scanPlan(op.elem, q)
			}
		case reflect.Slice:
			h := (*sliceHeader)(w)
			if h.cap > 0 && c.add(h.data, op.elem.t, h.cap) && len(op.elem.ops) > 0 {
				for k := range h.cap {
					c.scanPlan(op.elem, unsafe.Add(h.data, uintptr(k)*op.elem.size))
				}
			}
		case reflect.Map:
			m := *(*unsafe.Pointer)(w)
			if m == nil {
				continue
			}
			if _, ok := c.maps[m]; ok {
				continue
			}
			c.maps[m] = reflect.Value{}
			t := op.t
			it := reflect.NewAt(t, w).Elem().MapRange()
			k, v := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			for it.Next() {
				k.SetIterKey(it)
				v.SetIterValue(it)
				c.scan(t.Key(), k.Addr().UnsafePointer())
				c.scan(t.Elem(), v.Addr().UnsafePointer())
			}
		case reflect.Interface:
			v := reflect.NewAt(op.t, w).Elem()
			if v.IsNil() {
				continue
			}
			d := v.Elem()
			dt := d.Type()
			switch {
			case clonerShared[dt]:
			case dt.Kind() == reflect.Pointer:
				if q := d.UnsafePointer(); q != nil && dt.Elem().Size() > 0 && c.add(q, dt.Elem(), 1) {
					c.scan(dt.Elem(), q)
				}
			case len(c.plan(dt).ops) > 0:
				panic(fmt.Sprintf("flow: clone: interface %v holds a %v by value", op.t, dt))
			}
		}
	}
}

// build groups the blocks into outer ones (a block inside another, a field or a sub-slice, is
// copied with it), allocates their copies and fills them.
func (c *cloner) build() {
	all := make([]*cblock, 0, len(c.seen))
	for _, b := range c.seen {
		all = append(all, b)
	}
	slices.SortFunc(all, func(a, b *cblock) int {
		if a.start != b.start {
			if a.start < b.start {
				return -1
			}
			return 1
		}
		if a.end != b.end {
			if a.end > b.end {
				return -1
			}
			return 1
		}
		return 0
	})
	var cur *cblock
	for _, b := range all {
		if cur != nil && b.start < cur.end {
			if b.end > cur.end {
				panic(fmt.Sprintf("flow: clone: %v x %d overlaps %v x %d in part", b.t, b.n, cur.t, cur.n))
			}
			b.outer = cur
			continue
		}
		b.outer, cur = b, b
		c.blocks = append(c.blocks, b)
	}
	// Allocate and copy every outer block whole (typed copies: the collector sees its pointers),
	// then point what they hold into the copy.
	for _, b := range c.blocks {
		c.bytes += int64(b.end - b.start)
		if b.n == 1 && b.t.Kind() != reflect.Array {
			v := reflect.New(b.t)
			v.Elem().Set(reflect.NewAt(b.t, b.src).Elem())
			b.dst = v.UnsafePointer()
		} else {
			s := reflect.MakeSlice(reflect.SliceOf(b.t), b.n, b.n)
			old := reflect.NewAt(reflect.ArrayOf(b.n, b.t), b.src).Elem().Slice(0, b.n)
			reflect.Copy(s, old)
			b.dst = s.UnsafePointer()
		}
	}
	for _, b := range c.blocks {
		pl := c.plan(b.t)
		if len(pl.ops) == 0 {
			continue
		}
		for i := range b.n {
			c.fixPlan(pl, unsafe.Add(b.dst, uintptr(i)*pl.size))
		}
	}
}

// translate is the copy's address for the original's p (nil for nil).
func (c *cloner) translate(p unsafe.Pointer) unsafe.Pointer {
	if p == nil {
		return nil
	}
	a := uintptr(p)
	i, _ := slices.BinarySearchFunc(c.blocks, a, func(b *cblock, a uintptr) int {
		switch {
		case b.end <= a:
			return -1
		case b.start > a:
			return 1
		}
		return 0
	})
	if i >= len(c.blocks) || c.blocks[i].start > a || a >= c.blocks[i].end {
		panic("flow: clone: a pointer outside the objects walked")
	}
	b := c.blocks[i]
	return unsafe.Add(b.dst, a-b.start)
}

// fix points the value of type t at p (in a copy, still holding the original's pointers) into
// the copy.
func (c *cloner) fix(t reflect.Type, p unsafe.Pointer) { c.fixPlan(c.plan(t), p) }

func (c *cloner) fixPlan(pl *typePlan, p unsafe.Pointer) {
	for i := range pl.ops {
		op := &pl.ops[i]
		w := unsafe.Add(p, op.off)
		switch op.kind {
		case reflect.Pointer:
			if q := (*unsafe.Pointer)(w); *q != nil {
				*q = c.translate(*q)
			}
		case reflect.Slice:
			if h := (*sliceHeader)(w); h.cap > 0 {
				h.data = c.translate(h.data)
			}
		case reflect.Map:
			t := op.t
			v := reflect.NewAt(t, w).Elem()
			if v.IsNil() {
				continue
			}
			old := v.UnsafePointer()
			m, ok := c.maps[old]
			if !ok || !m.IsValid() {
				m = reflect.MakeMapWithSize(t, v.Len())
				c.maps[old] = m
				c.bytes += int64(v.Len()) * int64(t.Key().Size()+t.Elem().Size())
				it := v.MapRange()
				for it.Next() {
					k, x := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
					k.SetIterKey(it)
					x.SetIterValue(it)
					c.fix(t.Key(), k.Addr().UnsafePointer())
					c.fix(t.Elem(), x.Addr().UnsafePointer())
					m.SetMapIndex(k, x)
				}
			}
			v.Set(m)
		case reflect.Interface:
			v := reflect.NewAt(op.t, w).Elem()
			if v.IsNil() {
				continue
			}
			d := v.Elem()
			dt := d.Type()
			if dt.Kind() == reflect.Pointer && !clonerShared[dt] && dt.Elem().Size() > 0 && !d.IsNil() {
				v.Set(reflect.NewAt(dt.Elem(), c.translate(d.UnsafePointer())))
			}
		}
	}
}
