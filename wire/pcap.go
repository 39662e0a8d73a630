package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Classic pcap (the libpcap file format, draft-ietf-opsawg-pcap): a 24-byte
// file header, then per packet a 16-byte record header and the bytes.
// The writer uses the nanosecond-resolution magic and little-endian byte
// order; the reader accepts both resolutions and both byte orders.
const (
	pcapMagicMicro    = 0xA1B2C3D4
	pcapMagicNano     = 0xA1B23C4D
	pcapFileHeaderLen = 24
	pcapRecHeaderLen  = 16

	// LinkTypeEthernet: IEEE 802.3 frames; RoCEv2 and PFC captures.
	LinkTypeEthernet uint32 = 1
	// LinkTypeInfiniBand: IB packets starting with the LRH (tcpdump.org
	// link-layer header types, LINKTYPE_INFINIBAND).
	LinkTypeInfiniBand uint32 = 247

	// PcapFileHeaderLen and PcapRecordHeaderLen are the sizes of the file header and of each
	// record's header.
	PcapFileHeaderLen   = pcapFileHeaderLen
	PcapRecordHeaderLen = pcapRecHeaderLen

	// DefaultSnapLen is libpcap's maximum snapshot length.
	DefaultSnapLen = 262144
)

// PcapWriter writes a classic pcap file with nanosecond timestamps.
type PcapWriter struct {
	w       io.Writer
	snapLen int
	hdr     [pcapRecHeaderLen]byte
}

// NewPcapWriter writes the file header to w and returns a writer for packets
// of the given link type (LinkTypeEthernet or LinkTypeInfiniBand). Records
// longer than snapLen are cut to it (orig_len keeps the full length); 0 means
// DefaultSnapLen.
func NewPcapWriter(w io.Writer, linkType uint32, snapLen int) (*PcapWriter, error) {
	if snapLen <= 0 {
		snapLen = DefaultSnapLen
	}
	if snapLen > 1<<30 {
		return nil, fmt.Errorf("wire: pcap snaplen %d is above 2^30", snapLen)
	}
	var h [pcapFileHeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:], pcapMagicNano)
	binary.LittleEndian.PutUint16(h[4:], 2) // version 2.4
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], uint32(snapLen))
	binary.LittleEndian.PutUint32(h[20:], linkType)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("wire: writing pcap header: %w", err)
	}
	return &PcapWriter{w: w, snapLen: snapLen}, nil
}

// WritePacket writes one record. tsNanos is the capture time in nanoseconds
// since the Unix epoch (a simulator passes its start offset plus sim time).
func (pw *PcapWriter) WritePacket(tsNanos int64, data []byte) error {
	if tsNanos < 0 {
		return fmt.Errorf("wire: pcap timestamp %d ns is before the epoch", tsNanos)
	}
	incl := min(len(data), pw.snapLen)
	binary.LittleEndian.PutUint32(pw.hdr[0:], uint32(tsNanos/1e9))
	binary.LittleEndian.PutUint32(pw.hdr[4:], uint32(tsNanos%1e9))
	binary.LittleEndian.PutUint32(pw.hdr[8:], uint32(incl))
	binary.LittleEndian.PutUint32(pw.hdr[12:], uint32(len(data)))
	if _, err := pw.w.Write(pw.hdr[:]); err != nil {
		return fmt.Errorf("wire: writing pcap record: %w", err)
	}
	if _, err := pw.w.Write(data[:incl]); err != nil {
		return fmt.Errorf("wire: writing pcap record: %w", err)
	}
	return nil
}

// PcapRecord is one packet read back.
type PcapRecord struct {
	TsNanos int64  // capture time, ns since the Unix epoch
	OrigLen int    // length on the wire
	Data    []byte // captured bytes (len < OrigLen when cut by the snaplen); reused by the next call to Next
}

// Truncated reports whether the record was cut by the snaplen.
func (r *PcapRecord) Truncated() bool { return len(r.Data) < r.OrigLen }

// PcapReader reads a classic pcap file.
type PcapReader struct {
	r        io.Reader
	order    binary.ByteOrder
	nano     bool
	snapLen  int
	linkType uint32
	offset   int64 // file offset of the next record, for errors
	buf      []byte
	hdr      [pcapRecHeaderLen]byte
}

// maxRecordLen bounds a record's length whatever the file claims, so a
// corrupt header cannot make the reader allocate gigabytes.
const maxRecordLen = 1 << 20

// NewPcapReader reads and checks the file header.
func NewPcapReader(r io.Reader) (*PcapReader, error) {
	var h [pcapFileHeaderLen]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		return nil, errorf("pcap", "file header", 0, "read %d of 24 bytes: %v", n, err)
	}
	pr := &PcapReader{r: r, offset: pcapFileHeaderLen}
	switch {
	case binary.LittleEndian.Uint32(h[:]) == pcapMagicNano:
		pr.order, pr.nano = binary.LittleEndian, true
	case binary.BigEndian.Uint32(h[:]) == pcapMagicNano:
		pr.order, pr.nano = binary.BigEndian, true
	case binary.LittleEndian.Uint32(h[:]) == pcapMagicMicro:
		pr.order = binary.LittleEndian
	case binary.BigEndian.Uint32(h[:]) == pcapMagicMicro:
		pr.order = binary.BigEndian
	default:
		return nil, errorf("pcap", "magic", 0, "0x%08x is not a classic pcap magic (pcapng is not supported)", binary.BigEndian.Uint32(h[:]))
	}
	if major := pr.order.Uint16(h[4:]); major != 2 {
		return nil, errorf("pcap", "version", 4, "major version %d, want 2", major)
	}
	pr.snapLen = int(pr.order.Uint32(h[16:]))
	pr.linkType = pr.order.Uint32(h[20:]) & 0x0FFFFFFF // upper bits: FCS length flags
	return pr, nil
}

// LinkType is the file's link-layer header type.
func (pr *PcapReader) LinkType() uint32 { return pr.linkType }

// SnapLen is the file's snapshot length.
func (pr *PcapReader) SnapLen() int { return pr.snapLen }

// Next reads the next record; it returns io.EOF after the last one.
func (pr *PcapReader) Next() (PcapRecord, error) {
	var rec PcapRecord
	n, err := io.ReadFull(pr.r, pr.hdr[:])
	if err == io.EOF {
		return rec, io.EOF
	}
	if err != nil {
		return rec, errorf("pcap", "record header", int(pr.offset), "read %d of 16 bytes: %v", n, err)
	}
	sec, frac := pr.order.Uint32(pr.hdr[0:]), pr.order.Uint32(pr.hdr[4:])
	incl, orig := pr.order.Uint32(pr.hdr[8:]), pr.order.Uint32(pr.hdr[12:])
	if !pr.nano {
		frac *= 1000
		if frac >= 1e9 {
			return rec, errorf("pcap", "ts_usec", int(pr.offset)+4, "%d is not below 1e6", frac/1000)
		}
	} else if frac >= 1e9 {
		return rec, errorf("pcap", "ts_nsec", int(pr.offset)+4, "%d is not below 1e9", frac)
	}
	if incl > maxRecordLen {
		return rec, errorf("pcap", "incl_len", int(pr.offset)+8, "%d bytes is above the %d-byte limit", incl, maxRecordLen)
	}
	if incl > orig {
		return rec, errorf("pcap", "incl_len", int(pr.offset)+8, "%d is above orig_len %d", incl, orig)
	}
	if cap(pr.buf) < int(incl) {
		pr.buf = make([]byte, incl)
	}
	rec.Data = pr.buf[:incl]
	if n, err := io.ReadFull(pr.r, rec.Data); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return rec, errorf("pcap", "packet data", int(pr.offset)+pcapRecHeaderLen, "read %d of %d bytes: %v", n, incl, err)
	}
	pr.offset += pcapRecHeaderLen + int64(incl)
	rec.TsNanos = int64(sec)*1e9 + int64(frac)
	rec.OrigLen = int(orig)
	return rec, nil
}
