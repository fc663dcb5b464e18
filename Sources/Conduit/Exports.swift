// The vocabulary types are part of the public API.
@_exported public import ConduitCore
