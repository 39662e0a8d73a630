// Package chakra reads MLCommons Chakra execution traces (ET files, the protobuf schema
// ChakraProtoMsg of mlcommons/chakra schema/protobuf/et_def.proto) and turns the traces of
// every rank of a job into a training.Plan that compare simulates on every fabric variant.
//
// Decode reads the wire format directly with google.golang.org/protobuf/encoding/protowire (no
// generated code), so every error names the file, the node record and the field. Load reads
// the rank files <prefix>.<rank>.et, matches collectives across the ranks of each process
// group and sends with receives, and builds the plan; docs/chakra.md documents the mapping and
// what is not modelled.
package chakra
