/// Why a file, a folder or a URI cannot be opened or read, in words a listener can act on. The daemon's D-Bus face
/// answers each kind with its D-Bus error (`notFound`: org.freedesktop.DBus.Error.FileNotFound, `invalid`: InvalidArgs,
/// `notSupported`: NotSupported, `failed`: Failed).
///
/// ```swift
/// throw OpenError(.notSupported, "Lectern opens file://, http:// and https:// URIs only, not ftp:")
/// ```
public struct OpenError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No such file or folder.
        case notFound
        /// Not something Lectern can play or read: not audio, no audio inside, too much to read, a malformed URI.
        case invalid
        /// A kind of source Lectern does not open (another URI scheme, a remote host).
        case notSupported
        /// The system refused (a folder that cannot be read).
        case failed
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
