#if SCTP
import ConduitSCTP

extension FuzzTargets {
    /// A PPID-50 message on an `sctp+udp://` association (RFC 8832). What parses encodes to a
    /// message that parses back equal, and keeps the label and protocol bytes as sent. (Not byte
    /// for byte: RFC 8832 lets a reliable channel's ignored parameter be anything, and a
    /// retransmission count over 65,535 is read as 65,535.)
    static let dcep = FuzzTarget(
        name: "dcep",
        summary: "DCEPMessage(parsing:), DataChannelOpen: round trip, label and protocol kept byte for byte"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "dcep")
        guard let message = try? DCEPMessage(parsing: input) else { return false }
        let reparsed = try? DCEPMessage(parsing: message.bytes)
        try check.require(reparsed == message, "\(message) encodes to \(hex(message.bytes)), which parses to \(String(describing: reparsed))")
        if case .open(let open) = message {
            try check.requireSameBytes(message.bytes[12...], input[12...], "the label and protocol of \(open)")
            try check.requireSameBytes(message.bytes[0..<4], input[0..<4], "the type and priority of \(open)")
        }
        return true
    }
}
#endif
