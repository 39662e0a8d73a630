// Package flow is fabricsim's flow-level backend: it runs a message graph (package msggraph) on
// a topology with a fabric's configuration (fabric.Config) as a fluid network, and returns the
// same result schema (package result) as the packet backend, orders of magnitude faster.
//
// What it keeps of the fabric (docs/flow.md says how and why):
//   - routing as the packet backend does it: ECMP on the same hash of the QP's entropy with the
//     same per-switch salts, QP-aware hashing, InfiniBand's linear forwarding tables (package
//     ibsm); adaptive routing and packet spraying as a pooled bundle of the stage's links
//     (or adaptive routing per flow where few QPs share a destination switch's loaded downlinks:
//     the spread rule, arflows.go; Options.PooledAR keeps the bundles);
//   - queues: every egress queue holds its flows' bytes, served first in, first out in the fluid
//     limit, so oversubscription and incast build queues where the packet backend does;
//   - link-level flow control: PFC (per ingress port and priority, static or dynamic XOFF) and
//     InfiniBand credits (per link and VL) as throttles that keep a switch's ingress counters at
//     their bound, pausing every flow of the link and class (victims, head-of-line blocking);
//   - DCQCN: the packet backend's own reaction and notification point state machines (package
//     transport/cc/dcqcn), driven by RED marking drawn per flow and step, with the feedback delay;
//   - ACKs and InfiniBand credit updates as load on the links they cross.
//
// The network advances in steps (Options.Step, 1 us by default, the base step; up to 4 us where
// congestion control is at rest: adaptive.go) while queues, throttles or rates change, and
// jumps from event to event while every rate is constant. Messages start and
// complete at exact times; within a step bytes move through a whole uncongested path, and a
// flow's completion adds the path's latency from the packet backend's closed form.
package flow
