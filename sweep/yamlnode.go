package sweep

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxNodes bounds the size of a scenario tree after aliases are expanded, so that a small
// file full of nested aliases (a "billion laughs") cannot exhaust memory; maxWork bounds the
// nodes a whole expansion copies (runs times nodes per run).
const (
	maxNodes = 100000
	maxWork  = 50000000
)

// countNodes counts the nodes of a tree without aliases.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, ch := range n.Content {
		c += countNodes(ch)
	}
	return c
}

// copyNode returns a deep copy of n with aliases replaced by copies of what they point to, so
// that setting a field through one path never changes another. budget counts nodes left.
func copyNode(n *yaml.Node, budget *int) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: alias *%s points nowhere", n.Line, n.Value)
		}
		n = n.Alias
	}
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("line %d: document has more than %d nodes once aliases are expanded", n.Line, maxNodes)
	}
	c := *n
	c.Anchor = ""
	c.Alias = nil
	if n.Content != nil {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, child := range n.Content {
			cc, err := copyNode(child, budget)
			if err != nil {
				return nil, err
			}
			c.Content[i] = cc
		}
	}
	return &c, nil
}

// canonicalize strips comments and presentation (quoting, flow style) from a tree in place and
// makes every tag explicit, so that encoding it yields the same bytes for any two documents
// with the same content. Mapping key order is kept: it is the user's and YAML keeps it.
func canonicalize(n *yaml.Node) {
	n.Tag = n.ShortTag()
	n.Style = 0
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		canonicalize(c)
	}
}

// encodeNode encodes a tree as block YAML indented by two spaces.
func encodeNode(n *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// label is how a value is shown in the results table: a scalar's own text, anything else as
// one line of flow YAML.
func label(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	c := *n
	setFlow(&c)
	b, err := encodeNode(&c)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.TrimSpace(string(b))
}

// setFlow makes a copied tree print on one line. It copies the nodes it changes.
func setFlow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
		content := make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			cc := *c
			setFlow(&cc)
			content[i] = &cc
		}
		n.Content = content
	}
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
}

// canonicalText is the canonical encoding of a copy of n, used to compare values.
func canonicalText(n *yaml.Node) string {
	budget := maxNodes
	c, err := copyNode(n, &budget)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	canonicalize(c)
	b, err := encodeNode(c)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// sameTree reports whether a and b hold the same content at the same lines; it checks that a
// slice of a file re-parses to the tree it came from.
func sameTree(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.Value != b.Value || a.ShortTag() != b.ShortTag() || a.Line != b.Line || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !sameTree(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// kindName names a node's kind for error messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return fmt.Sprintf("the scalar %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "empty"
}

// mappingGet returns the value for key in a mapping node and the key node, or nils.
func mappingGet(m *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}
