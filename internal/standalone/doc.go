// Package standalone holds repository-wide checks that the repository stands alone: its docs,
// comments, messages and data cite primary sources (docs/references.md), never a file outside
// the repository. It has no code, only tests.
package standalone
