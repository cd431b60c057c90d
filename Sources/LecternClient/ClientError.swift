/// Why a call to lecternd did not give what was asked: in words for the user, and of which kind (the CLI's exit
/// status follows from it).
public struct ClientError: Error, CustomStringConvertible {
    public enum Kind: Sendable {
        /// lecternd refused: no such book, nothing loaded, a value out of range.
        case refused
        /// The bus or lecternd cannot be reached, or lecternd went away.
        case unreachable
        /// lecternd answered in a form this client does not read: it is of another version.
        case otherVersion
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
