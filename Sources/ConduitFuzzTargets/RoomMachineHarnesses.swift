import ConduitCore
import ConduitRelayCore
import ConduitRooms

extension FuzzTargets {
    /// A conference machine (alice) attacked from its relay link: junk and mutated real relay
    /// frames, besides the relay's real frames, time and what alice's and bob's apps may do, from
    /// every starting state (``RoomProgramRun``). Alice's events follow the session rules, her
    /// caps hold, her deadlines move on; while she got only the relay's frames, bob's reliable
    /// messages reach her at most once and in order, then all of them.
    static let conferenceMachine = FuzzTarget(
        name: "conference-machine",
        summary: "ConferenceMachine from every starting state under fuzzed relay frames, time and app calls: event rules, caps, at most once in order"
    ) { (input) throws(FuzzFailure) in
        try runRoomProgram(input, target: "conference-machine") { run, program throws(FuzzFailure) in
            run.aliceAttacked = true
            let bytes = program.byte().map { $0 & 1 == 0 } ?? true
                ? program.bytes(Int(program.byte() ?? 0))
                : mutatedFrame(run.fromRelay, program.byte() ?? 0, at: program.byte() ?? 0, xor: program.byte() ?? 0)
            guard run.linkOpen[0], !run.clients[0].isHoldingBeyondLimit else { return }
            bytes.withUnsafeBytes { run.clients[0].handle(datagram: $0, now: run.now) }
            try run.collect(0)
        }
    }

    /// The relay machine attacked from a link of its own (opened, closed and joined as the
    /// program says): junk and mutated real client frames, besides alice's and bob's real
    /// traffic, time and what their apps may do, from every starting state. The relay's caps hold
    /// (links, pending joins, rooms, members, subgroups, sessions, queues), every action is
    /// well-formed, its deadline moves on; and bob's reliable messages reach alice at most once
    /// and in order whatever the attacker sends, then all of them.
    static let relayMachine = FuzzTarget(
        name: "relay-machine",
        summary: "RelayMachine from every starting state under a fuzzed link's frames, time and members' traffic: caps, actions, at most once in order"
    ) { (input) throws(FuzzFailure) in
        try runRoomProgram(input, target: "relay-machine") { run, program throws(FuzzFailure) in
            let choice = program.byte() ?? 0
            switch choice % 4 {
            case 0:
                if run.attackerOpen {
                    run.relay.connectionClosed(RoomProgramRun.attacker, now: run.now)
                } else {
                    _ = run.relay.connectionOpened(RoomProgramRun.attacker, now: run.now)
                }
                run.attackerOpen.toggle()
            case 1:
                guard run.attackerOpen else { return }
                run.relay.handle(RoomProgramRun.attacker, datagram: program.bytes(Int(program.byte() ?? 0)), now: run.now)
            default:
                guard run.attackerOpen else { return }
                let frame = mutatedFrame(run.fromClients, program.byte() ?? 0, at: program.byte() ?? 0, xor: choice & 1 == 0 ? 0 : program.byte() ?? 0)
                run.relay.handle(RoomProgramRun.attacker, datagram: frame, now: run.now)
            }
            try run.service()
        }
    }

    /// Runs one room program: the start byte, then operations; `attack` is the target's own (op 0).
    static func runRoomProgram(
        _ input: UnsafeRawBufferPointer, target: String, attack: (inout RoomProgramRun, inout ProgramReader) throws(FuzzFailure) -> Void
    ) throws(FuzzFailure) -> Bool {
        var program = ProgramReader(input)
        var run = try RoomProgramRun.starting(program.byte() ?? 0, target: target)
        try program.forEachOperation(limit: 256) { op, program throws(FuzzFailure) in
            switch op % 8 {
            case 0: try attack(&run, &program)
            case 1: try run.deliverToRelay(count: Int(program.byte() ?? 0) % 4 + 1)
            case 2: try run.deliverToClient(Int(program.byte() ?? 0) & 1, count: Int(program.byte() ?? 0) % 4 + 1)
            case 3: try run.advance(fuzzedStep(program.byte() ?? 0))
            case 4, 5: try run.app(Int(op >> 3) & 1, program.byte() ?? 0, program.byte() ?? 0)
            case 6: try run.service()
            default: try run.transmit()
            }
            try run.checkRelay()
        }
        try run.finish()
        return true
    }
}

extension RoomProgramRun {
    /// The run for start byte `start`: each of the 12 starting states is reached once per process
    /// and copied (the machines are values), so an input pays only for its own program.
    static func starting(_ start: UInt8, target: String) throws(FuzzFailure) -> RoomProgramRun {
        let canonical = start & 0x80 | (start & 0x7F) % 6
        if var run = startingStates[Int(canonical)] {
            run.check = Invariants(target: target)
            for side in 0..<2 { run.ledgers[side].check = run.check }
            return run
        }
        return try RoomProgramRun(check: Invariants(target: target), start: canonical)  // throws what setting up broke
    }

    private static let startingStates: [RoomProgramRun?] = (0...255).map { start in
        let canonical = UInt8(start) & 0x80 | (UInt8(start) & 0x7F) % 6
        guard canonical == UInt8(start) else { return nil }
        return try? RoomProgramRun(check: Invariants(target: "room"), start: canonical)
    }

    /// What alice's (side 0) or bob's app may do: open (0), send (1), accept (2), decline (3),
    /// close (4), leave (5), subscribe (6) or unsubscribe (7) "breakout", publish (8), subscribe
    /// to the other's track (9), send on the track (10), extension to the other (11).
    mutating func app(_ side: Int, _ action: UInt8, _ argument: UInt8) throws(FuzzFailure) {
        guard linkOpen[side] else { return }
        let key = Self.streams[Int(argument >> 4) % Self.streams.count]
        let other = Self.peers[1 - side]
        switch action % 12 {
        case 0:
            if clients[side].makeOutbound(key, type: Self.types[Int(argument) % 4], now: now) == .none { try ledgers[side].madeOutbound(key) }
        case 1:
            if side == 1, key.streamID == 101 {
                let payload = tracedPayload(stream: key.streamID, index: sentByBob.count, size: Int(argument & 0x0F) * 60)
                // Every message-type send is traced (alice checks each one she delivers against
                // it, whatever its reliability); the reliable ones must all arrive.
                if case .queued = clients[1].enqueue(key, bytes: payload, timestamp: 0, now: now), let type = clients[1].outboundType(key), type.isMessage {
                    sentByBob.append(payload)
                    sentByBobReliably.append(type == .reliableMessage)
                }
            } else {
                _ = clients[side].enqueue(key, bytes: Array(repeating: argument, count: Int(argument & 0x0F) * 60), timestamp: 0, now: now)
            }
        case 2:
            if clients[side].makeInbound(key) == .none { try ledgers[side].madeInbound(key) }
        case 3:
            clients[side].unsupportInbound(key)
            if side == 0 { declinedByAlice.insert(key) }
        case 4: clients[side].closeOutbound(key)
        case 5: clients[side].leave()
        case 6: clients[side].subscribe("breakout", dataSession: argument & 1 == 0)
        case 7:
            // Only a connected member's leave closes its sessions there: after the end, streams it
            // was told of stay to be read (a no-op unsubscribe changes nothing).
            let closes = clients[side].isConnected && clients[side].isSubscribed("breakout")
            clients[side].unsubscribe("breakout")
            try collect(side)
            if closes { ledgers[side].forget(subgroup: "breakout") }
        case 8: _ = clients[side].publishTrack("camera", reliability: argument & 1 == 0 ? .reliableOrdered : Reliability(ordered: false, limit: .maxRetransmits(0)))
        case 9: _ = clients[side].subscribeTrack("camera", of: other)
        case 10: _ = clients[side].sendTrack("camera", bytes: Array(repeating: argument, count: Int(argument & 0x0F) * 100), now: now)
        default: _ = clients[side].sendExtension(9, to: other, body: [argument])
        }
        try collect(side)
        if clients[side].isEnded { try ledgers[side].expectDisconnected() }
    }

    /// Drains client `side`'s events through its ledger; checks alice's deliveries from bob and her caps.
    mutating func collect(_ side: Int) throws(FuzzFailure) {
        while let event = clients[side].pollEvent() {
            try ledgers[side].see(Self.kind(event))
            guard side == 0, !aliceAttacked, case .received(let key, let from, .message(let bytes, _)) = event, key.streamID == 101, from == "bob" else { continue }
            guard let index = tracedIndex(bytes, stream: key.streamID) else {
                throw FuzzFailure(target: check.target, message: "alice delivered on \(key) a message bob never sent: \(hex(bytes))")
            }
            try check.require(index < sentByBob.count && sentByBob[index] == bytes, "alice delivered bob's message \(index) altered")
            if let last = deliveredToAlice.last { try check.require(index > last, "alice delivered bob's message \(index) after \(last): twice or out of order") }
            deliveredToAlice.append(index)
        }
        let configuration = clients[side].configuration
        try checkFootprint(clients[side].footprint, configuration.session, maxSenders: configuration.maxSenders, check, "\(Self.peers[side])")
        try check.require(clients[side].trackQueuedBytesNow <= configuration.session.maxQueuedBytesPerSession + 64 * 1_024, "\(Self.peers[side]): \(clients[side].trackQueuedBytesNow) track bytes queued")
    }

    static func kind(_ event: ConferenceEvent) -> SessionEventKind {
        switch event {
        case .connected: .connected
        case .disconnected: .disconnected
        case .dataSessionIncoming(let key, _, _): .incoming(key)
        case .received(let key, _, _): .received(key)
        case .outboundClosed(let key, _): .outboundClosed(key)
        case .inboundClosed(let key, _): .inboundClosed(key)
        case .tooLongQueuedData(let key, let enabled): .tooLongQueuedData(key, enabled: enabled)
        case .sendQueueHasRoom(let key): .sendQueueHasRoom(key)
        default: .other
        }
    }

    /// The relay's caps, with every action taken.
    mutating func checkRelay() throws(FuzzFailure) {
        try service()
        let footprint = relay.footprint
        let limits = relay.configuration
        try check.require(footprint.connections <= 3, "relay: \(footprint.connections) links for 3 opened")
        try check.require(footprint.pendingConnections >= 0 && footprint.pendingConnections <= limits.maxPendingConnections,
                          "relay: \(footprint.pendingConnections) pending links (cap \(limits.maxPendingConnections))")
        try check.require(footprint.rooms <= limits.maxRooms && footprint.largestRoom <= limits.maxMembersPerRoom, "relay: rooms or members over their caps: \(footprint)")
        try check.require(footprint.largestSubgroups <= limits.maxSubgroupsPerRoom && footprint.largestTracks <= limits.maxSubgroupsPerRoom
                          && footprint.largestChannels <= limits.maxSubgroupsPerRoom, "relay: subgroups, tracks or channels over their cap: \(footprint)")
        try check.require(footprint.largestSubscriptions <= limits.maxSubscriptionsPerMember && footprint.largestSessions <= limits.maxSessionsPerMember
                          && footprint.largestUnsupported <= limits.maxSessionsPerMember, "relay: a member's subscriptions or sessions over their cap: \(footprint)")
        try check.require(footprint.largestOutbox <= limits.maxQueuedBytesPerReceiver + 64 * 1_024, "relay: \(footprint.largestOutbox) bytes queued for one link")
        try check.require(footprint.actionsQueued == 0, "relay: actions left after the driver took them all")
    }

    /// Alice's app declines every stream announced to her that she has not made: until an app
    /// answers, its machine holds what the stream brings and, at its limit, stops reading the
    /// link (a stream nobody answers stalls the others: the app's to resolve, not a loss).
    mutating func declineUnansweredByAlice() throws(FuzzFailure) -> Bool {
        guard linkOpen[0] else { return false }
        var declined = false
        for key in ledgers[0].announced.subtracting(ledgers[0].accepted).subtracting(declinedByAlice) {
            clients[0].unsupportInbound(key)
            declinedByAlice.insert(key)
            declined = true
        }
        try collect(0)
        return declined
    }

    /// Lets the honest exchange finish: bob's reliable messages all reach alice unless she was
    /// attacked directly, or either of them left or lost the link. Alice's app answers every
    /// stream announced to her meanwhile, as an app must sooner or later.
    mutating func finish() throws(FuzzFailure) {
        for _ in 0..<100 {
            try settle()
            if try declineUnansweredByAlice() { continue }
            guard toRelay.allSatisfy(\.isEmpty), let next = LinkTime.earliest(clients[0].nextTransmit(now: now), clients[1].nextTransmit(now: now)) else { break }
            try advance(max(.milliseconds(1), next - now))
        }
        try settle()
        let key = Self.streams[1]
        guard !aliceAttacked, linkOpen[0], linkOpen[1], !clients[0].isEnded, !clients[1].isEnded, clients[0].isInboundAccepted(key),
              [nil, .sessionEnd].contains(clients[1].outboundCloseReason(key)), clients[0].statistics.droppedPendingOverflow == 0,
              relay.statistics.slowReceiversDisconnected == 0
        else { return }
        let reliable = sentByBob.indices.filter { sentByBobReliably[$0] }
        if let announced = clients[0].inboundType(key), let made = clients[1].outboundType(key), announced != made {
            // Another member announced the stream to alice first, with another type: she keeps one
            // session per stream, of that type, and drops bob's frames, counted (bob is not told,
            // as in a group call a sender never is of one receiver).
            try check.require(deliveredToAlice.isEmpty, "alice delivered bob's \(made) messages \(deliveredToAlice) on her \(announced) session \(key)")
            let counted = clients[0].inboundStatistics(key)?.droppedWrongType ?? 0
            try check.require(reliable.isEmpty || counted > 0, "alice dropped bob's \(made) messages on her \(announced) session \(key) uncounted")
            return
        }
        try check.require(deliveredToAlice.filter { sentByBobReliably[$0] } == reliable,
                          "alice delivered \(deliveredToAlice) of the \(reliable.count) reliable messages bob sent on \(key) (\(reliable))")
    }
}

