/// A D-Bus error: a name (`org.freedesktop.DBus.Error.InvalidArgs`) and a message for people.
/// Handlers throw it to send an error reply; calls throw it when the peer answers with an error.
///
/// ```swift
/// throw BusError.invalidArgs("Rate must be a finite number, got nan")
/// ```
public struct BusError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    public static func failed(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.Failed", message: message) }
    public static func invalidArgs(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message) }
    public static func unknownMethod(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.UnknownMethod", message: message) }
    public static func unknownInterface(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.UnknownInterface", message: message) }
    public static func unknownObject(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.UnknownObject", message: message) }
    public static func unknownProperty(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.UnknownProperty", message: message) }
    public static func propertyReadOnly(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: message) }
    public static func notSupported(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.NotSupported", message: message) }
    public static func noReply(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.NoReply", message: message) }
    public static func disconnected(_ message: String) -> BusError { .init(name: "org.freedesktop.DBus.Error.Disconnected", message: message) }
    public static func noMemory() -> BusError { .init(name: "org.freedesktop.DBus.Error.NoMemory", message: "out of memory") }
}
