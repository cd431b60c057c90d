/// Which signals a subscription receives; the same rule is given to the bus as a match string.
///
/// ```swift
/// MatchRule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
///           path: "/org/mpris/MediaPlayer2")
/// ```
public struct MatchRule: Sendable, Hashable {
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: String?

    public init(sender: String? = nil, interface: String? = nil, member: String? = nil, path: String? = nil) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
    }

    /// The bus's match-rule syntax.
    public var text: String {
        var parts = ["type='signal'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        if let path { parts.append("path='\(path)'") }
        return parts.joined(separator: ",")
    }

    /// Local matching. A well-known `sender` is not resolved here: the bus already filtered by it,
    /// so only unique names are compared.
    func matches(_ message: ReceivedMessage) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender, sender.hasPrefix(":"), message.sender != sender { return false }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let path, message.path?.rawValue != path { return false }
        return true
    }
}
