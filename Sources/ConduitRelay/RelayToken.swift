public import ConduitCore
public import ConduitRooms
public import ConduitRelayCore

/// A join token: who may join which room with which rights, until when. Minted by the app's
/// server (or `conduit token`) with the relay's secret, verified by the relay.
///
/// ```
/// ct1.<payload>.<mac>         both base64url without padding
///
/// payload  version(1)=1  room(1-byte length + UTF-8)  peer(1 + UTF-8)
///          rights(1: bit 0 publish, bit 1 subscribe, bit 2 any subgroup)
///          subgroup count(1) × subgroup(1 + UTF-8)
///          expiry(8: Unix seconds, big-endian)  token ID(16: random)
/// mac      HMAC-SHA256(secret, "ct1." + payload in base64url)
/// ```
///
/// The token ID lets the relay refuse a second join with the same token (a replay).
public struct RelayToken: Sendable, Hashable {
    /// What every token's text starts with (the format's version).
    public static let prefix = "ct1."
    /// Bytes of a token's random ID.
    public static let idSize = 16

    /// The room the token joins.
    public var room: RoomID
    /// The peer ID the bearer joins as; the relay stamps it on everything the bearer sends.
    public var peer: PeerID
    /// Whether the bearer may send (data sessions, tracks, channels).
    public var canPublish: Bool
    /// Whether the bearer may receive and subscribe to subgroups.
    public var canSubscribe: Bool
    /// Subgroups the peer may subscribe to; nil means any.
    public var allowedSubgroups: Set<SubgroupName>?
    /// Unix time (seconds) after which the token is refused.
    public var expiresAt: UInt64
    /// The token's random ID (``idSize`` bytes); the relay refuses a second join with the same ID.
    public var id: [UInt8]

    /// Makes a token; `id` defaults to fresh random bytes. Its text is ``signed(with:)``.
    public init(
        room: RoomID,
        peer: PeerID,
        canPublish: Bool,
        canSubscribe: Bool,
        allowedSubgroups: Set<SubgroupName>? = [],
        expiresAt: UInt64,
        id: [UInt8]? = nil
    ) {
        self.room = room
        self.peer = peer
        self.canPublish = canPublish
        self.canSubscribe = canSubscribe
        self.allowedSubgroups = allowedSubgroups
        self.expiresAt = expiresAt
        var generator = SystemRandomNumberGenerator()
        self.id = id ?? (0..<Self.idSize).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// What the relay lets the bearer do once joined.
    public var grant: RelayGrant {
        RelayGrant(room: room, peer: peer, canPublish: canPublish, canSubscribe: canSubscribe, allowedSubgroups: allowedSubgroups)
    }

    package var payload: [UInt8] {
        var out: [UInt8] = [1]
        func string(_ text: String) {
            let utf8 = Array(text.utf8)
            out.append(UInt8(utf8.count))
            out.append(contentsOf: utf8)
        }
        string(room.rawValue)
        string(peer.rawValue)
        out.append((canPublish ? 1 : 0) | (canSubscribe ? 2 : 0) | (allowedSubgroups == nil ? 4 : 0))
        let subgroups = (allowedSubgroups ?? []).sorted().prefix(255)
        out.append(UInt8(subgroups.count))
        for name in subgroups { string(name.rawValue) }
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: expiresAt >> UInt64(shift))) }
        out.append(contentsOf: id.prefix(Self.idSize))
        return out
    }

    /// The token as text, signed with `secret`.
    public func signed(with secret: RelaySecret) -> String {
        let head = Self.prefix + Base64URL.encode(payload)
        let mac = HMACSHA256.authenticationCode(for: Array(head.utf8), key: secret.key)
        return head + "." + Base64URL.encode(Array(mac))
    }

    /// Parses and authenticates `text`. Checks the form and the signature only; expiry, room, peer
    /// and replay are the ``RelayTokenAuthority``'s business.
    public static func verify(_ text: String, secret: RelaySecret) -> Result<RelayToken, RelayRefusal> {
        guard !text.isEmpty else { return .failure(.tokenMissing) }
        guard text.utf8.count <= RoomControlFrame.maxTokenBytes, text.hasPrefix(prefix) else { return .failure(.tokenMalformed) }
        let parts = text.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = Base64URL.decode(parts[0]), let mac = Base64URL.decode(parts[1]), mac.count == 32 else {
            return .failure(.tokenMalformed)
        }
        let head = prefix + parts[0]
        guard HMACSHA256.isValid(mac, for: Array(head.utf8), key: secret.key) else {
            return .failure(.tokenTampered)
        }
        guard let token = decode(payload) else { return .failure(.tokenMalformed) }
        return .success(token)
    }

    package static func decode(_ payload: [UInt8]) -> RelayToken? {
        var index = 0
        func byte() -> UInt8? {
            guard index < payload.count else { return nil }
            defer { index += 1 }
            return payload[index]
        }
        func string() -> String? {
            guard let count = byte().map(Int.init), index + count <= payload.count else { return nil }
            defer { index += count }
            return String(validating: payload[index..<index + count], as: UTF8.self)  // strict: no U+FFFD
        }
        guard byte() == 1,
            let room = string().flatMap({ try? RoomID($0) }),
            let peer = string().flatMap({ try? PeerID($0) }),
            let rights = byte(), rights & ~7 == 0,
            let count = byte()
        else { return nil }
        var subgroups: Set<SubgroupName> = []
        for _ in 0..<count {
            guard let name = string().flatMap({ try? SubgroupName($0) }) else { return nil }
            subgroups.insert(name)
        }
        guard payload.count - index == 8 + idSize else { return nil }
        var expiry: UInt64 = 0
        for _ in 0..<8 { expiry = expiry << 8 | UInt64(payload[index]); index += 1 }
        return RelayToken(
            room: room,
            peer: peer,
            canPublish: rights & 1 != 0,
            canSubscribe: rights & 2 != 0,
            allowedSubgroups: rights & 4 != 0 ? nil : subgroups,
            expiresAt: expiry,
            id: Array(payload[index...])
        )
    }
}

/// The relay's signing secret (HMAC-SHA256 key). At least 16 bytes.
public struct RelaySecret: Sendable {
    /// The key with its padded blocks hashed once, not per token.
    let key: HMACSHA256.Key

    /// Uses `bytes` as the secret. Throws `invalidConfiguration` if shorter than 16 bytes.
    public init(bytes: [UInt8]) throws(ConduitError) {
        guard bytes.count >= 16 else {
            throw ConduitError(.invalidConfiguration, "the relay secret is \(bytes.count) bytes; at least 16 are needed")
        }
        self.key = HMACSHA256.Key(bytes)
    }

    /// The contents of a secret file: surrounding whitespace (a trailing newline) is not part of it.
    public init(fileContents: [UInt8]) throws(ConduitError) {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        var bytes = fileContents[...]
        while let last = bytes.last, isSpace(last) { bytes = bytes.dropLast() }
        while let first = bytes.first, isSpace(first) { bytes = bytes.dropFirst() }
        try self.init(bytes: Array(bytes))
    }
}

/// Verifies join tokens for the relay: signature, expiry, room, peer, and replays (each token ID
/// joins once; IDs are remembered until their token expires, at most `maxRemembered` of them).
public struct RelayTokenAuthority: Sendable {
    /// The key tokens are signed and checked with.
    public let secret: RelaySecret
    /// How many used token IDs are remembered against replays; the oldest are forgotten first.
    public let maxRemembered: Int
    var used: [[UInt8]: UInt64] = [:]

    /// Makes an authority that signs and checks with `secret`.
    public init(secret: RelaySecret, maxRemembered: Int = 100_000) {
        self.secret = secret
        self.maxRemembered = maxRemembered
    }

    /// The grant for a join, or why it is refused. `unixTime` is the wall clock in seconds.
    public mutating func authorize(_ request: RelayJoinRequest, unixTime: UInt64) -> Result<RelayGrant, RelayRefusal> {
        authorizeToken(request, unixTime: unixTime).map(\.grant)
    }

    /// As ``authorize(_:unixTime:)``, returning the token itself (a clustered relay announces its ID).
    mutating func authorizeToken(_ request: RelayJoinRequest, unixTime: UInt64) -> Result<RelayToken, RelayRefusal> {
        let token: RelayToken
        switch RelayToken.verify(String(decoding: request.token, as: UTF8.self), secret: secret) {
        case .success(let verified): token = verified
        case .failure(let refusal): return .failure(refusal)
        }
        guard unixTime < token.expiresAt else { return .failure(.tokenExpired) }
        guard token.room == request.room else { return .failure(.wrongRoom) }
        guard token.peer == request.peer else { return .failure(.wrongPeer) }
        return claim(token.id, expiresAt: token.expiresAt, unixTime: unixTime).map { token }
    }

    /// Remembers token `id` for one join: `.tokenReplayed` if it joined already, `.overLimit` if
    /// the table is full of unexpired IDs.
    mutating func claim(_ id: [UInt8], expiresAt: UInt64, unixTime: UInt64) -> Result<Void, RelayRefusal> {
        guard used[id] == nil else { return .failure(.tokenReplayed) }
        guard remember(id, expiresAt: expiresAt, unixTime: unixTime) else { return .failure(.overLimit) }
        return .success(())
    }

    /// A token another relay of the cluster admitted: refused here too from now on (until it
    /// expires). False if it could not be remembered (the table is full of unexpired IDs).
    mutating func noteUsedElsewhere(id: [UInt8], expiresAt: UInt64, unixTime: UInt64) -> Bool {
        guard unixTime < expiresAt, used[id] == nil else { return true }
        return remember(id, expiresAt: expiresAt, unixTime: unixTime)
    }

    private mutating func remember(_ id: [UInt8], expiresAt: UInt64, unixTime: UInt64) -> Bool {
        if used.count >= maxRemembered {
            used = used.filter { $0.value > unixTime }
            guard used.count < maxRemembered else { return false }
        }
        used[id] = expiresAt
        return true
    }
}
