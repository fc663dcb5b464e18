import ConduitCore
import ConduitRooms
import Foundation
import Testing

/// Each finding of the fuzzers, pinned where it was fixed: the parser's answer to the input that
/// found it (the input itself is in `Fuzz/regressions/<target>/`, replayed by `FuzzCorpusTests`).
@Suite struct FuzzFindingTests {
    static func regression(_ target: String, _ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: FuzzCorpusTests.fuzzDirectory.appendingPathComponent("regressions/\(target)/\(name)")))
    }

    @Test("room control: a channel declared with no reliability limit but a limit value is refused, as a track header is")
    func reliabilityWithoutLimitCarriesNoValue() throws {
        // `declareChannels` with #chat: flags 0x80 (ordered, no limit) and a value of 1,024. It used to
        // parse and re-encode with the value dropped, so two byte strings meant one declaration.
        let input = try Self.regression("room-control", "reliability-none-with-value")
        #expect(throws: WireError.reservedBitsSet) { try RoomControlFrame.parse(input) }
        var canonical = input
        canonical[17] = 0  // the value (bytes 15...18) back to 0: the same declaration, canonical
        #expect(throws: Never.self) { try RoomControlFrame.parse(canonical) }
    }
}
