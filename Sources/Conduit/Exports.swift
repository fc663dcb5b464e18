// What an app names when it embeds Conduit: the vocabulary of streams, sessions, rooms and
// invitations, the reasons and errors it is told, and the transport seam it configures. Each is
// re-exported by name; the rest of the core (machines, wire codecs, the reliability engine) stays
// behind `import ConduitCore` / `import ConduitRooms` for those who drive the machines themselves.

// Identifiers and session vocabulary.
@_exported public import struct ConduitCore.StreamID
@_exported public import enum ConduitCore.SessionType
@_exported public import struct ConduitCore.PeerID
@_exported public import struct ConduitCore.RoomID
@_exported public import struct ConduitCore.SubgroupName
@_exported public import struct ConduitCore.ChannelLabel
@_exported public import protocol ConduitCore.ValidatedIdentifier
@_exported public import struct ConduitCore.Reliability
@_exported public import enum ConduitCore.RateLimit
@_exported public import enum ConduitCore.Limits
@_exported public import struct ConduitCore.ConduitInstant
// Errors and reasons.
@_exported public import struct ConduitCore.ConduitError
@_exported public import enum ConduitCore.DataSessionFailReason
@_exported public import enum ConduitCore.DataSessionCloseReason
@_exported public import enum ConduitCore.DisconnectReason
// Bytes session types: fragments and the optional aggregator.
@_exported public import struct ConduitCore.ReceivedFragment
@_exported public import struct ConduitCore.FragmentAggregator
@_exported public import struct ConduitCore.CallStatistics
// The transport seam: configuration strings, the registry, and the protocols a transport module
// implements.
@_exported public import struct ConduitCore.TransportURL
@_exported public import struct ConduitCore.TransportRegistry
@_exported public import protocol ConduitCore.Transport
@_exported public import protocol ConduitCore.TransportLink
@_exported public import protocol ConduitCore.TransportListener
@_exported public import struct ConduitCore.TransportCapabilities
@_exported public import struct ConduitCore.LinkStatistics
@_exported public import struct ConduitCore.LinkAcknowledgement
// Rooms: members, tracks, labeled channels, reasons.
@_exported public import enum ConduitRooms.RelayDisconnectReason
@_exported public import enum ConduitRooms.RelayRefusal
@_exported public import struct ConduitRooms.RoomMember
@_exported public import struct ConduitRooms.TrackInfo
@_exported public import struct ConduitRooms.ChannelDeclaration
@_exported public import struct ConduitRooms.ChannelInfo
@_exported public import struct ConduitRooms.ConferenceStatistics
// Invitations.
@_exported public import struct ConduitRooms.InvitationID
@_exported public import struct ConduitRooms.Invitation
@_exported public import struct ConduitRooms.InvitationView
@_exported public import struct ConduitRooms.InvitationRequest
@_exported public import struct ConduitRooms.NewInvitation
@_exported public import struct ConduitRooms.InvitationReceipt
@_exported public import enum ConduitRooms.InvitationEvent
@_exported public import enum ConduitRooms.InviteeState
@_exported public import struct ConduitRooms.InvitationError
