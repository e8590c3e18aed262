// Package rdmap implements the wire formats of the Remote Direct Memory
// Access Protocol (RFC 5040) carried in DDP segments (package ddp): the
// RDMAP control field and its opcodes, the RDMA Read Request header, the
// Terminate message, and the full tables of Terminate layers, error types
// and error codes.
//
// The tables are defined once here, as Go values with String methods, so
// that the RTL generator, the register map and the documentation reuse
// them: Opcode (with its row of RFC 5040 Fig. 4 from Opcode.Info), Layer,
// ErrorType and Cause (every named Layer/EType/Code of RFC 5040 Fig. 9,
// RFC 5041 §7.2 and RFC 5044 §8 / RFC 6581, listed by Causes).
// Cause.Headers gives the M, D and R flags of RFC 5040 Fig. 10.
//
// For a dissector (iwdump, tests), the entry points are:
//
//	m, err := rdmap.Parse(ulpdu) // DDP header + RDMAP control + Read Request or Terminate
//	m.Opcode().String()         // "RDMA Read Request", "Send with Invalidate", ...
//	m.ReadRequest.Fields()      // Sink/Source STag and TO, size
//	m.Terminate.Cause.String()  // "DDP Untagged Buffer Error: Invalid QN (1/2/0x01)"
//	t, err := rdmap.ParseTerminate(ddpPayload)
//
// Parse checks structure only (the opcode must be defined and fit the T flag
// and QN; the RDMAP header must be complete) and reports a *ParseError with
// the Cause a data sink would put in its Terminate. Version checks and
// everything that needs stream state belong to the engine (golden/iwarp).
//
// Encoders are append-style: ReadRequestFields.Append, Terminate.Append
// and Terminate.AppendMessage (a whole Terminate ULPDU).
//
// Decisions where the RFCs leave a choice (see shared/spec/ddp-rdmap.md):
//
//   - Terminate.SegLen is sent as the whole DDP segment length (the MPA
//     ULPDU_Length of the failing FPDU); received values are information only.
//   - The copied DDP header is sized by the T bit of the copied control byte,
//     the copied RDMA header by the copied opcode: R=1 on a copied Send
//     (siw does this for Send with Invalidate errors) carries no RDMA header.
//   - Linux soft-iWARP 6.1 writes the Terminate Control with little-endian C
//     bit fields: octet 0 is EType<<4|Layer, and M, D, R are bits 0, 1, 2 of
//     the Hdr Ctrl octet. ParseTerminate accepts that layout where it is
//     unambiguous and reports it in Terminate.Layout; this package always
//     sends the RFC layout.
package rdmap
