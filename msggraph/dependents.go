package msggraph

// Dependents returns, for every message, the messages that depend on it, in ID order, in
// compressed form: the dependents of message i are list[start[i]:start[i+1]]. The engines walk
// it when a message completes.
func (g *Graph) Dependents() (start, list []int32) {
	m := len(g.Msgs)
	start = make([]int32, m+1)
	for i := range g.Msgs {
		for _, d := range g.Msgs[i].Deps {
			start[d+1]++
		}
	}
	for i := 0; i < m; i++ {
		start[i+1] += start[i]
	}
	list = make([]int32, start[m])
	fill := append([]int32(nil), start[:m]...)
	for i := range g.Msgs {
		for _, d := range g.Msgs[i].Deps {
			list[fill[d]] = int32(i)
			fill[d]++
		}
	}
	return start, list
}
