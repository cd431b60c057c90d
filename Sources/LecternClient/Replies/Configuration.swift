import DBus

/// A setting in effect (Configuration1's Values): its value as text, and where it comes from.
public struct SettingValue: ReplyDecodable {
    public var key: String
    public var value: String
    /// The flag, the environment variable, the file's path, or "default".
    public var source: String

    public init(_ reader: inout ReplyReader) throws {
        key = try reader.value("key")
        value = try reader.value("value")
        source = try reader.value("source")
    }
}

/// Configuration1's Reload: the settings applied now, and those applied when lecternd next starts.
public struct Reloaded: Sendable {
    public var applied: [String]
    public var atNextStart: [String]
}

/// What the client reads of org.lectern.Configuration1.
public struct Configuration1: Sendable {
    public let values = Decoding<[SettingValue]>(.reply(.configuration, method: "Values")) { try $0.structs("values") ?? [] }
    public let reloaded = Decoding<Reloaded>(.reply(.configuration, method: "Reload")) {
        Reloaded(applied: try $0.value("applied"), atNextStart: try $0.value("at_next_start"))
    }
    public let libraryFolders = Decoding<[String]>.property(.configuration, "LibraryFolders")
}
