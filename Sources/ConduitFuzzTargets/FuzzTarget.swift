/// One fuzz target: a harness that feeds arbitrary bytes to a parser (or a program of operations
/// to a machine) and checks what must hold whatever the bytes are. The libFuzzer executable
/// (`Fuzz/conduit-fuzz`) traps on a ``FuzzFailure``; the test suite replays the committed corpora
/// and regression inputs through the same harnesses.
public struct FuzzTarget: Sendable {
    /// The name `Scripts/fuzz.sh`, `CONDUIT_FUZZ_TARGET` and `Fuzz/corpus/<name>/` use.
    public let name: String
    /// What the target feeds and what it checks, in a line.
    public let summary: String
    /// Runs one input: true if the parser accepted it (and every invariant held), false if it
    /// refused it with its typed error. Throws when an invariant is broken.
    public let run: @Sendable (UnsafeRawBufferPointer) throws(FuzzFailure) -> Bool

    /// Makes a target.
    public init(name: String, summary: String, run: @escaping @Sendable (UnsafeRawBufferPointer) throws(FuzzFailure) -> Bool) {
        self.name = name
        self.summary = summary
        self.run = run
    }

    /// Runs one input held in an array; true if the parser accepted it.
    @discardableResult
    public func run(_ bytes: [UInt8]) throws(FuzzFailure) -> Bool {
        let result: Result<Bool, FuzzFailure> = bytes.withUnsafeBytes { raw in
            Result { () throws(FuzzFailure) in try run(raw) }
        }
        return try result.get()
    }
}

/// An invariant a harness found broken: a finding.
public struct FuzzFailure: Error, Sendable, CustomStringConvertible {
    /// The target that found it.
    public let target: String
    /// Which invariant, and the values that break it.
    public let message: String

    /// Makes a failure.
    public init(target: String, message: String) {
        self.target = target
        self.message = message
    }

    /// The target and the message, for logs and crash reports.
    public var description: String { "\(target): \(message)" }
}

/// The invariant checks every harness shares, bound to its target's name for the messages.
struct Invariants {
    let target: String

    func require(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFailure) {
        guard condition else { throw FuzzFailure(target: target, message: message()) }
    }

    /// Fails unless `encoded` is exactly `input` (a canonical format re-encodes what it accepted byte for byte).
    func requireSameBytes(_ encoded: some Collection<UInt8>, _ input: some Collection<UInt8>, _ what: String) throws(FuzzFailure) {
        try require(
            encoded.elementsEqual(input),
            "\(what) re-encodes to \(hex(encoded)) but was parsed from \(hex(input))"
        )
    }
}

/// Bytes as hex for failure messages (the first 64).
func hex(_ bytes: some Collection<UInt8>) -> String {
    let digits = Array("0123456789abcdef")
    var text = ""
    for byte in bytes.prefix(64) { text.append(digits[Int(byte >> 4)]); text.append(digits[Int(byte & 0x0F)]) }
    return bytes.count > 64 ? text + "… (\(bytes.count) bytes)" : text
}
