import ConduitCore

/// What the machine targets (`call-machine`, `conference-machine`) check in a machine's events,
/// whatever its kind: each event reduced to what the session rules speak of.
enum SessionEventKind {
    case connected
    case disconnected
    case incoming(SessionKey)
    case received(SessionKey)
    case outboundClosed(SessionKey)
    case inboundClosed(SessionKey)
    case tooLongQueuedData(SessionKey, enabled: Bool)
    case sendQueueHasRoom(SessionKey)
    /// An event no session rule covers (membership, subgroups, tracks, extensions).
    case other
}

/// The rules a machine's events follow, checked one event at a time against what the app did:
/// nothing after `disconnected` (which comes at most once), a stream announced at most once, data
/// only for an inbound session the app made and that has not closed, each close at most once and
/// only for a session that exists, `tooLongQueuedData` alternating on and off. After
/// `disconnected`, only a stream the app makes then (announced before the end) delivers what it
/// held and closes.
struct SessionEventLedger {
    var check: Invariants
    let side: String
    var connected = false
    var disconnected = false
    var announced: Set<SessionKey> = []
    var accepted: Set<SessionKey> = []
    var inboundClosed: Set<SessionKey> = []
    var opened: Set<SessionKey> = []
    var outboundClosed: Set<SessionKey> = []
    var queueingTooLong: Set<SessionKey> = []
    /// Streams made after `disconnected`, to read what they held.
    var drainedAfterEnd: Set<SessionKey> = []

    init(check: Invariants, side: String) {
        self.check = check
        self.side = side
    }

    mutating func see(_ event: SessionEventKind) throws(FuzzFailure) {
        let drained: Bool
        switch event {
        case .received(let key), .inboundClosed(let key): drained = drainedAfterEnd.contains(key)
        default: drained = false
        }
        if !drained { try check.require(!disconnected, "\(side): \(event) after disconnected") }
        switch event {
        case .connected:
            try check.require(!connected, "\(side): connected twice")
            connected = true
        case .disconnected:
            disconnected = true
        case .incoming(let key):
            try check.require(announced.insert(key).inserted, "\(side): stream \(key) announced twice")
        case .received(let key):
            try check.require(accepted.contains(key), "\(side): data for \(key), an inbound session the app never made")
            try check.require(!inboundClosed.contains(key), "\(side): data for \(key) after its inboundClosed")
        case .inboundClosed(let key):
            try check.require(accepted.contains(key), "\(side): inboundClosed for \(key), an inbound session the app never made")
            try check.require(inboundClosed.insert(key).inserted, "\(side): inboundClosed for \(key) twice")
        case .outboundClosed(let key):
            try check.require(opened.contains(key), "\(side): outboundClosed for \(key), never opened")
            try check.require(outboundClosed.insert(key).inserted, "\(side): outboundClosed for \(key) twice")
        case .tooLongQueuedData(let key, let enabled):
            try check.require(opened.contains(key), "\(side): tooLongQueuedData for \(key), never opened")
            try check.require(queueingTooLong.contains(key) != enabled, "\(side): tooLongQueuedData(enabled: \(enabled)) twice in a row for \(key)")
            if enabled { queueingTooLong.insert(key) } else { queueingTooLong.remove(key) }
        case .sendQueueHasRoom(let key):
            try check.require(opened.contains(key), "\(side): sendQueueHasRoom for \(key), never opened")
        case .other:
            break
        }
    }

    /// The app's `makeInbound` answered `.none`: only for a stream announced (and not made yet).
    mutating func madeInbound(_ key: SessionKey) throws(FuzzFailure) {
        try check.require(announced.contains(key), "\(side): makeInbound(\(key)) succeeded for a stream never announced")
        try check.require(accepted.insert(key).inserted, "\(side): makeInbound(\(key)) succeeded twice")
        if disconnected { drainedAfterEnd.insert(key) }
    }

    /// The app's `makeOutbound` answered `.none`.
    mutating func madeOutbound(_ key: SessionKey) throws(FuzzFailure) {
        try check.require(opened.insert(key).inserted || outboundClosed.contains(key), "\(side): makeOutbound(\(key)) succeeded for an open session")
        outboundClosed.remove(key)
        queueingTooLong.remove(key)
    }

    /// This side left `subgroup`: its sessions there closed (their events already seen) and its
    /// streams may be announced afresh once it subscribes again.
    mutating func forget(subgroup: SubgroupName) {
        for key in announced where key.subgroup == subgroup {
            announced.remove(key)
            accepted.remove(key)
            inboundClosed.remove(key)
        }
    }

    /// The app ended the machine or its link closed: nothing may follow its `disconnected`.
    mutating func expectDisconnected() throws(FuzzFailure) {
        try check.require(disconnected, "\(side): ended without a disconnected event")
    }
}

/// Checks what a session layer holds against the caps of its configuration.
func checkFootprint(_ footprint: SessionFootprint, _ configuration: CallConfiguration, maxSenders: Int, _ check: Invariants, _ side: String) throws(FuzzFailure) {
    // Reliable data is held past the limit by at most what the datagram that reached it
    // completed (one message), since the driver reads no more until the app answers.
    let heldLimit = configuration.maxPendingInboundBytes + SessionType.reliableMessage.maxSendSize
    try check.require(footprint.largestPendingInboundBytes <= heldLimit,
                      "\(side): \(footprint.largestPendingInboundBytes) bytes held for one stream, over maxPendingInboundBytes \(configuration.maxPendingInboundBytes) and one message")
    try check.require(footprint.reassemblers <= maxSenders, "\(side): \(footprint.reassemblers) reassemblers for \(maxSenders) senders")
    try check.require(footprint.largestReassemblyBytes <= configuration.reassembly.maxBufferedBytes,
                      "\(side): a reassembler holds \(footprint.largestReassemblyBytes) bytes, over its cap \(configuration.reassembly.maxBufferedBytes)")
    try check.require(footprint.largestIncompleteMessages <= configuration.reassembly.maxIncompleteMessages,
                      "\(side): a reassembler holds \(footprint.largestIncompleteMessages) incomplete messages, over its cap")
    try check.require(footprint.largestQueuedBytes <= configuration.maxQueuedBytesPerSession + Limits.maxBytesSize,
                      "\(side): an outbound queue holds \(footprint.largestQueuedBytes) bytes")
    try check.require(footprint.eventsQueued == 0, "\(side): \(footprint.eventsQueued) events left after the driver drained them")
}

/// A payload that names its stream and its index, so deliveries can be traced to sends.
func tracedPayload(stream: StreamID, index: Int, size: Int) -> [UInt8] {
    [0xC7, UInt8(truncatingIfNeeded: stream.rawValue), UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index)]
        + Array(repeating: UInt8(truncatingIfNeeded: index &* 13), count: size)
}

/// The index a traced payload carries, or nil for one that is not traced.
func tracedIndex(_ bytes: [UInt8], stream: StreamID) -> Int? {
    guard bytes.count >= 4, bytes[0] == 0xC7, bytes[1] == UInt8(truncatingIfNeeded: stream.rawValue) else { return nil }
    return Int(bytes[2]) << 8 | Int(bytes[3])
}

/// A fuzzed time step: milliseconds for the low half of the byte, up to about 13 s for the high half.
func fuzzedStep(_ byte: UInt8) -> Duration {
    byte < 128 ? .milliseconds(Int(byte)) : .milliseconds(Int(byte - 127) * 100)
}

/// Checks that a machine's timeout deadline has moved past `now` once its timeout ran at `now`
/// (else a driver would spin on it).
func checkTimeoutMovedOn(_ deadline: ConduitInstant?, now: ConduitInstant, _ check: Invariants, _ side: String) throws(FuzzFailure) {
    guard let deadline else { return }
    try check.require(deadline > now, "\(side): timeout deadline \(deadline) not after now \(now) once handleTimeout ran: a driver would spin")
}

/// A real frame with one byte changed (or as it was: a replay); empty when there is none yet.
func mutatedFrame(_ pool: [[UInt8]], _ pick: UInt8, at position: UInt8, xor: UInt8) -> [UInt8] {
    guard !pool.isEmpty else { return [] }
    var frame = pool[Int(pick) % pool.count]
    if !frame.isEmpty { frame[Int(position) % frame.count] ^= xor }
    return frame
}

extension ProgramReader {
    /// Runs `body` on each operation byte, at most `limit` of them (so every input ends soon).
    mutating func forEachOperation(limit: Int, _ body: (UInt8, inout ProgramReader) throws(FuzzFailure) -> Void) throws(FuzzFailure) {
        var count = 0
        while count < limit, let op = byte() {
            count += 1
            try body(op, &self)
        }
    }
}
