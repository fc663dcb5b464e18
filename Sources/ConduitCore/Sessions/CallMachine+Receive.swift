extension CallMachine: DatagramHandling {
    /// Takes one datagram from the transport. Anything malformed or out of place is counted and
    /// dropped; nothing here throws or traps on peer input.
    public mutating func handle(datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        guard sessions.admitDatagram() else { return }
        let kind: FrameKind
        do { kind = try FrameKind.peek(datagram) } catch {
            sessions.statistics.malformedDatagrams += 1
            return
        }
        switch kind {
        case .data:
            do {
                let (header, payload) = try DataFrameHeader.parse(datagram)
                handleData(header, payload: UnsafeRawBufferPointer(rebasing: datagram[payload]), now: now)
            } catch {
                sessions.statistics.malformedDatagrams += 1
            }
        case .control:
            do { handleControl(try ControlFrame.parse(datagram), now: now) } catch {
                sessions.statistics.malformedDatagrams += 1
            }
        }
    }

    mutating func handleControl(_ frame: ControlFrame, now: ConduitInstant) {
        if case .hello(let peer, let supported) = frame {
            if case .handshaking = phase {
                phase = .connected(peer: peer, peerSupportsDataSessions: supported)
                sessions.events.append(.connected(peer: peer, peerSupportsDataSessions: supported))
            }
            return
        }
        guard isConnected else {
            sessions.statistics.droppedOutOfState += 1
            return
        }
        switch frame {
        case .hello:
            break
        case .sessionOpen(let streamID, let subgroupID, let subgroup, let type):
            // A subgroup ID names one subgroup, and the main room is 0 and has no name.
            guard (subgroupID == 0) == (subgroup == nil) else {
                sessions.statistics.malformedDatagrams += 1
                return
            }
            if subgroupID != 0, let subgroup, remoteSubgroups[subgroupID] != subgroup {
                guard remoteSubgroups[subgroupID] == nil, remoteSubgroups.count < Self.maxRemoteSubgroups else {
                    sessions.statistics.droppedUnknownSubgroup += 1
                    return
                }
                remoteSubgroups[subgroupID] = subgroup
            }
            let key = SessionKey(streamID: streamID, subgroup: subgroup)
            if sessions.isUnsupported(key) {
                // Declined before the sender opened it: tell the sender now.
                sessions.sendSessionControl(.sessionUnsupported(streamID: streamID, subgroupID: subgroupID), stream: streamID, subgroupID: subgroupID)
                return
            }
            sessions.announce(key, type: type, from: ())
        case .sessionUnsupported(let streamID, let subgroupID):
            let subgroup = localSubgroupIDs.first(where: { $0.value == subgroupID })?.key
            guard subgroupID == 0 || subgroup != nil else {
                sessions.statistics.droppedUnknownSubgroup += 1
                return
            }
            sessions.closeOutbound(SessionKey(streamID: streamID, subgroup: subgroup), reason: .unsupported)
        case .sessionClose(let streamID, let subgroupID, let reason):
            guard subgroupID == 0 || remoteSubgroups[subgroupID] != nil else {
                sessions.statistics.droppedUnknownSubgroup += 1
                return
            }
            sessions.discardReassembly(of: 0, streamID: streamID, subgroupID: subgroupID)
            sessions.closeInbound(SessionKey(streamID: streamID, subgroup: remoteSubgroups[subgroupID]), reason: reason)
        case .goodbye:
            end(.remoteHangUp)
        }
    }

    mutating func handleData(_ header: DataFrameHeader, payload: UnsafeRawBufferPointer, now: ConduitInstant) {
        sessions.statistics.dataFramesReceived += 1
        guard isConnected else {
            sessions.statistics.droppedOutOfState += 1
            return
        }
        // Per frame: no hashing where the main room (subgroup 0) is meant.
        let subgroup = header.subgroupID == 0 ? nil : remoteSubgroups[header.subgroupID]
        guard header.subgroupID == 0 || subgroup != nil else {
            sessions.statistics.droppedUnknownSubgroup += 1
            return
        }
        sessions.receive(header, payload: payload, for: SessionKey(streamID: header.streamID, subgroup: subgroup), from: (), reassemblyKey: 0, now: now)
    }
}
