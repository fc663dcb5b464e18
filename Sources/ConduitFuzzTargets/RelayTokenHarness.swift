import ConduitRelay
import ConduitRooms

extension FuzzTargets {
    /// The secret the harness signs and verifies with (fixed, so inputs replay).
    private static let secret = try! RelaySecret(bytes: Array(repeating: 0x5A, count: 32))

    /// Relay tokens: the payload decoder (what a token carries once its signature holds) and the
    /// whole text through `verify`. A decoded token encodes to a payload that decodes equal; a
    /// token signed with the secret verifies to itself; any text gets a refusal, never a crash.
    static let relayToken = FuzzTarget(
        name: "relay-token",
        summary: "RelayToken.decode, payload, signed/verify: round trip, typed refusals"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "relay-token")
        let bytes = Array(input)
        var accepted = false
        if let token = RelayToken.decode(bytes) {
            try check.require(token.id.count == RelayToken.idSize, "token ID of \(token.id.count) bytes")
            try check.require(RelayToken.decode(token.payload) == token, "token \(token) does not decode back from its payload")
            let text = token.signed(with: secret)
            let verified = RelayToken.verify(text, secret: secret)
            if text.utf8.count <= RoomControlFrame.maxTokenBytes {
                try check.require(verified == .success(token), "a signed token verifies to \(verified)")
            } else {
                try check.require(verified == .failure(.tokenMalformed), "an oversize token verifies to \(verified)")
            }
            accepted = true
        }
        switch RelayToken.verify(String(decoding: bytes, as: UTF8.self), secret: secret) {
        case .success(let token):
            try check.require(token.id.count == RelayToken.idSize, "a verified token has an ID of \(token.id.count) bytes")
            accepted = true
        case .failure:
            break
        }
        return accepted
    }
}
