import CDBus

/// A message as received, converted to Swift values on the connection's thread: no libdbus pointer
/// leaves the D-Bus layer.
public struct ReceivedMessage: Sendable {
    public enum Kind: Sendable { case methodCall, methodReturn, error, signal, other }
    public var kind: Kind
    public var serial: UInt32
    public var replySerial: UInt32
    public var sender: String?
    public var destination: String?
    public var path: ObjectPath?
    public var interface: String?
    public var member: String?
    public var errorName: String?
    /// The body's signature as sent.
    public var signature: String
    public var arguments: [DBusValue]
    public var noReplyExpected: Bool

    /// Reads the header of `message`; the body only when `decodeBody` (callers check the signature first).
    init(_ message: OpaquePointer, decodeBody: Bool = true) {
        func text(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        switch dbus_message_get_type(message) {
        case 1: kind = .methodCall
        case 2: kind = .methodReturn
        case 3: kind = .error
        case 4: kind = .signal
        default: kind = .other
        }
        serial = dbus_message_get_serial(message)
        replySerial = dbus_message_get_reply_serial(message)
        sender = text(dbus_message_get_sender(message))
        destination = text(dbus_message_get_destination(message))
        path = text(dbus_message_get_path(message)).flatMap(ObjectPath.init(rawValue:))
        interface = text(dbus_message_get_interface(message))
        member = text(dbus_message_get_member(message))
        errorName = text(dbus_message_get_error_name(message))
        signature = text(dbus_message_get_signature(message)) ?? ""
        noReplyExpected = dbus_message_get_no_reply(message) != 0
        arguments = decodeBody ? Unmarshaller.values(of: message) : []
    }

    /// Decodes the body now (after a signature check).
    func withBody(from message: OpaquePointer) -> ReceivedMessage {
        var copy = self
        copy.arguments = Unmarshaller.values(of: message)
        return copy
    }

    /// For an error reply: its name and first string argument.
    var busError: BusError {
        BusError(name: errorName ?? "org.freedesktop.DBus.Error.Failed",
                 message: arguments.first?.string ?? "")
    }
}

/// Owns one `DBusMessage` reference being built for sending; released in `deinit`. Built on one thread, then handed to
/// the thread that sends it (``EventLoop/perform(_:)``), which no longer changes it: hence unchecked Sendable.
final class OutgoingMessage: @unchecked Sendable {
    let raw: OpaquePointer

    private init?(_ raw: OpaquePointer?) {
        guard let raw else { return nil }
        self.raw = raw
    }
    deinit { dbus_message_unref(raw) }

    static func methodCall(destination: BusName?, path: ObjectPath, interface: InterfaceName?,
                           member: MemberName) -> OutgoingMessage? {
        OutgoingMessage(dbus_message_new_method_call(destination?.rawValue, path.rawValue, interface?.rawValue,
                                                     member.rawValue))
    }
    static func signal(path: ObjectPath, interface: InterfaceName, member: MemberName) -> OutgoingMessage? {
        OutgoingMessage(dbus_message_new_signal(path.rawValue, interface.rawValue, member.rawValue))
    }
    /// A method return or error addressed to the caller of `serial`.
    static func reply(to serial: UInt32, destination: String?, error: BusError? = nil) -> OutgoingMessage? {
        guard let message = OutgoingMessage(dbus_message_new(error == nil ? 2 : 3)) else { return nil }
        if let error {
            let name = ErrorName(rawValue: error.name)?.rawValue ?? "org.freedesktop.DBus.Error.Failed"
            guard dbus_message_set_error_name(message.raw, name) != 0 else { return nil }
        }
        if let destination, dbus_message_set_destination(message.raw, destination) == 0 { return nil }
        guard dbus_message_set_reply_serial(message.raw, serial) != 0 else { return nil }
        dbus_message_set_no_reply(message.raw, 1)
        return message
    }

    /// Appends validated arguments; throws when a value can't be marshalled (nothing is appended then).
    func append(_ values: [DBusValue]) throws {
        for value in values {
            do { try value.validate() } catch { throw BusError.invalidArgs("cannot send value: \(error)") }
        }
        guard Marshaller.append(values, to: raw) else { throw BusError.noMemory() }
    }
}
