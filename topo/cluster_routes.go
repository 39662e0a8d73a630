package topo

// clusterRoutes routes GPU clusters: a network tree plus identical servers (see Routes).
type clusterRoutes struct{}

func buildCluster(g *Graph) *clusterRoutes                   { return nil }
func (c *clusterRoutes) nextHops(n NodeID, dst int) []int32 { return nil }
func (c *clusterRoutes) hopsTo(n NodeID, dst int) int        { return -1 }
func (c *clusterRoutes) distinctPortSets() int               { return 0 }
func (c *clusterRoutes) bytes() int64                        { return 0 }
