import DBus

/// A renderer of the home network (Cast1's Renderers).
public struct CastRenderer: ReplyDecodable {
    public var name: String
    public var udn: String
    /// The address of the host it answers on.
    public var address: String
    /// This machine's interface it was found on.
    public var interface: String

    public init(_ reader: inout ReplyReader) throws {
        name = try reader.value("name")
        udn = try reader.value("udn")
        address = try reader.value("address")
        interface = try reader.value("interface")
    }
}

/// What the client reads of org.lectern.Cast1.
public struct Cast1: Sendable {
    public let network = Decoding<Bool>.property(.cast, "Network")
    public let problem = Decoding<String>.property(.cast, "Problem")
    public let renderers = Decoding<[CastRenderer]>(.property(.cast, name: "Renderers")) { try $0.structs("Renderers") ?? [] }
}
