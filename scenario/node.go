package scenario

import (
	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/yamlstrict"
)

// ParseNode is Parse for a document already decoded into a YAML node tree. Positions in errors
// are the nodes' own, so a caller that assembles a scenario from parts of another file (the
// fabric variants of a compare scenario) reports the lines the user wrote; name is the file
// those lines are in.
func ParseNode(root *yaml.Node, name, dir string) (*Scenario, error) {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Pos: Pos{Line: n.Line, Col: n.Column}, Msg: "want a mapping with keys name, seed, topology, fabric, traffic"}
	}
	s := &Scenario{File: name, Dir: dir}
	s.d = yamlstrict.NewDecoder(name)
	if err := s.d.Decode(n, reflectOf(s), ""); err != nil {
		return nil, err
	}
	s.applyDefaults()
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}
