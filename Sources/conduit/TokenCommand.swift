import ArgumentParser
import Conduit
import ConduitRelay
import Foundation

struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Mint a join token for a room, signed with the relay's secret (HMAC-SHA256).",
        discussion: """
            Prints the token (ct1.PAYLOAD.MAC) on one line. It binds the room, the peer ID, the rights (--publish: \
            may send; --subscribe: may receive and join subgroups), the subgroups the peer may subscribe to \
            (--subgroup, repeatable; '*' for any) and the expiry (--ttl seconds from now). Each token carries a \
            random ID and joins once: the relay refuses a replay. With neither --publish nor --subscribe, both \
            rights are granted.
            """
    )

    @Option(name: .customLong("secret-file"), help: "File holding the relay's secret (at least 16 bytes; surrounding whitespace ignored).")
    var secretFile: String

    @Option(help: "Room ID.")
    var room: String

    @Option(help: "Peer ID the token is for.")
    var peer: String

    @Flag(help: "The peer may send.")
    var publish = false

    @Flag(help: "The peer may receive and subscribe to subgroups.")
    var subscribe = false

    @Option(help: "A subgroup the peer may subscribe to (repeatable); '*' for any.")
    var subgroup: [String] = []

    @Option(help: "Seconds until the token expires.")
    var ttl: Int = 3_600

    func run() throws {
        let secret = try RelaySecretFile.load(secretFile)
        let roomID = try ReportOutput.checked { () throws(ConduitError) in try RoomID(room) }
        let peerID = try ReportOutput.checked { () throws(ConduitError) in try PeerID(peer) }
        guard ttl > 0, ttl <= 366 * 86_400 else { throw ValidationError("--ttl must be 1...\(366 * 86_400) seconds") }
        var subgroups: Set<SubgroupName>? = []
        for name in subgroup {
            if name == "*" {
                subgroups = nil
            } else {
                let checked = try ReportOutput.checked { () throws(ConduitError) in try SubgroupName(name) }
                subgroups?.insert(checked)
            }
        }
        let both = !publish && !subscribe
        let token = RelayToken(
            room: roomID, peer: peerID, canPublish: publish || both, canSubscribe: subscribe || both,
            allowedSubgroups: subgroups, expiresAt: RelayServer.unixTime() + UInt64(ttl)
        )
        print(token.signed(with: secret))
    }
}

enum RelaySecretFile {
    static func load(_ path: String) throws -> RelaySecret {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read the secret file \(path)")
        }
        return try ReportOutput.checked { () throws(ConduitError) in try RelaySecret(fileContents: Array(data)) }
    }
}
