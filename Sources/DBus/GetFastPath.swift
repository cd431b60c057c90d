import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// Answers Properties.Get straight from the libdbus message, on the I/O thread, when nothing stands in its way: no
/// call held, no earlier call of the same sender unfinished or waiting for its reply, an exported object with that
/// interface and a readable property whose value can be sent.
///
/// The answer is the general path's (``BusConnection``'s dispatch: `handling(_:body:)`, `handlePropertiesCall`),
/// without its conversions: no ``ReceivedMessage``, no decoded arguments, no closures, the variant's signature the
/// property's own. Get is what media widgets and playerctl send most (Position, PlaybackStatus, Metadata), so this
/// is the path of most calls; docs/decisions/get-fast-path.md has the measurements.
extension BusConnection {
    /// Answers `message` when it is a Get this path may answer, and sends the reply.
    /// false: nothing was sent, and the general path answers, errors included.
    func answerGetAtOnce(_ message: OpaquePointer) -> Bool {
        guard let member = dbus_message_get_member(message), strcmp(member, "Get") == 0,
              let interface = dbus_message_get_interface(message), strcmp(interface, "org.freedesktop.DBus.Properties") == 0,
              let signature = dbus_message_get_signature(message), strcmp(signature, "ss") == 0,
              let rawPath = dbus_message_get_path(message), let rawSender = dbus_message_get_sender(message)
        else { return false }
        let path = ObjectPath(validated: String(cString: rawPath))
        guard let object = table.objectWithoutHolds(at: path) else { return false }
        let sender = String(cString: rawSender)
        guard !calls.hasUnfinished(sender), !replies.isHolding(sender) else { return false }

        var arguments = DBusMessageIter()
        var interfaceName: UnsafePointer<CChar>?
        var propertyName: UnsafePointer<CChar>?
        guard dbus_message_iter_init(message, &arguments) != 0 else { return false }
        dbus_message_iter_get_basic(&arguments, &interfaceName)
        guard dbus_message_iter_next(&arguments) != 0 else { return false }
        dbus_message_iter_get_basic(&arguments, &propertyName)
        guard let interfaceName, let propertyName,
              let declaration = object.interfaces.first(where: { $0.name.rawValue.withCString { strcmp($0, interfaceName) == 0 } }),
              let property = declaration.properties.first(where: { $0.name.rawValue.withCString { strcmp($0, propertyName) == 0 } }),
              property.isReadable,
              let value = object.value(of: property, in: declaration), value.type == property.type,
              (try? value.validate(depth: 1)) != nil
        else { return false }

        if dbus_message_get_no_reply(message) != 0 { return true }
        guard let reply = dbus_message_new_method_return(message) else { return false }
        defer { dbus_message_unref(reply) }
        guard Marshaller.appendVariant(value, signature: property.signature, to: reply) else { return false }
        loop.onLoopThread { _ = dbus_connection_send($0, reply, nil) }
        return true
    }
}
