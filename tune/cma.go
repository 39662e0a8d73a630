package tune

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// cma drives gonum's CMA-ES (optimize.CmaEsChol; Krause, Arbonès and Igel, NIPS 2016: CMA-ES
// with a Cholesky-factor covariance update) one generation at a time: ask returns a generation's
// candidates, tell feeds back their objective values in candidate order. optimize.Minimize
// would call the objective from its own goroutines as evaluations finish; driving the method
// directly instead makes every generation one batch for the sweep machinery, and the order in
// which a batch's evaluations finish cannot change the search. The method's samples come from
// a PCG stream seeded by the search seed, so the same seed gives the same candidates.
//
// CmaEsChol samples from N(mean, C) with C the matrix of InitCholesky: the initial step size
// lives in C, which therefore starts at sigma^2 I (InitStepSize only scales its updates).
//
// The method runs on R^n; the search maps it onto the unit cube of the parameters' ranges by
// reflection at the faces (fold), which keeps the sampling distribution continuous where a
// clamp would pile samples onto the bounds.
type cma struct {
	ops     chan optimize.Task
	res     chan optimize.Task
	pop     int
	pending []optimize.Task
	done    bool
}

// newCMA starts the method in dim dimensions at mean with step size sigma (in units of the
// cube's edge); population 0 takes CMA-ES's default, 4 + floor(3 ln dim).
func newCMA(dim int, mean []float64, sigma float64, population int, seed uint64) *cma {
	return newCMAStream(dim, mean, sigma, population, seed, 0)
}

// newCMAStream is newCMA drawing its samples from stream number stream of the seed (each arm of
// a search over categorical choices has its own).
func newCMAStream(dim int, mean []float64, sigma float64, population int, seed, stream uint64) *cma {
	var chol mat.Cholesky
	cov := mat.NewDiagDense(dim, nil)
	for i := range dim {
		cov.SetDiag(i, sigma*sigma)
	}
	if !chol.Factorize(cov) {
		panic("tune: sigma^2 I is not positive definite")
	}
	m := &optimize.CmaEsChol{InitStepSize: sigma, InitCholesky: &chol, Population: population, Src: rand.NewPCG(seed, 0x74756e65+stream)}
	pop := m.Init(dim, math.MaxInt32)
	tasks := make([]optimize.Task, pop)
	for i := range tasks {
		tasks[i].Location = &optimize.Location{X: make([]float64, dim)}
	}
	copy(tasks[0].X, mean)
	c := &cma{ops: make(chan optimize.Task), res: make(chan optimize.Task), pop: pop}
	go m.Run(c.ops, c.res, tasks)
	return c
}

// ask returns the next generation (pop points in R^dim), or nil when the method has stopped
// (its distribution collapsed).
func (c *cma) ask() [][]float64 {
	if c.done {
		return nil
	}
	xs := make([][]float64, c.pop)
	c.pending = make([]optimize.Task, c.pop)
	for range c.pop {
		t := <-c.ops
		xs[t.ID] = append([]float64(nil), t.X...)
		c.pending[t.ID] = t
	}
	return xs
}

// tell feeds back the generation's objective values, in the order ask returned its points.
func (c *cma) tell(fs []float64) {
	for i, f := range fs {
		t := c.pending[i]
		t.F = f
		c.res <- t
	}
	t := <-c.ops // the method's verdict on the generation
	if t.Op == optimize.MethodDone {
		c.done = true
		c.stop()
		return
	}
	t.Op = optimize.MajorIteration
	c.res <- t // go on: the method sends the next generation
}

// stop ends the method's goroutine: it is told to stop, and what it still sends is drained.
func (c *cma) stop() {
	if c.res == nil {
		return
	}
	go func(ops chan optimize.Task) {
		for range ops {
		}
	}(c.ops)
	c.res <- optimize.Task{Op: optimize.PostIteration}
	close(c.res)
	c.res = nil
}

// fold folds x into [0,1] by reflection at 0 and 1 (..., -0.2 -> 0.2, 1.3 -> 0.7, 2.1 -> 0.1).
func fold(x float64) float64 {
	y := math.Mod(math.Abs(x), 2)
	if y > 1 {
		y = 2 - y
	}
	return y
}
