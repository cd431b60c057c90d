import DBus
import Foundation
import LecternBooks
import LecternCore
import LecternMedia
import Logging

/// `org.freedesktop.Application` on /org/lectern/Lectern, under the name org.lectern.Lectern: what a desktop calls
/// when the user activates Lectern (a click on the shell's media card, `gtk-launch`, `gapplication launch`), as the
/// desktop entry org.lectern.Lectern.desktop says with `DBusActivatable=true`. The running daemon answers, or D-Bus
/// activation starts it: never a second one.
///
/// Lectern has no window: Activate changes nothing (a started daemon has restored its book, paused); Open plays the
/// files and folders it is given as books of the library (the first one's), as MPRIS OpenUri does. There are no actions.
public enum ApplicationService {
    /// The application id: the desktop entry's name, the bus name, and (as a path) the object.
    public static let id = "org.lectern.Lectern"
    public static let path = ObjectPath("/org/lectern/Lectern")!
    static let interfaceName = "org.freedesktop.Application"

    public static func interface(books: Eventually<BookOpener>, logger: Logger) -> Interface {
        Interface(interfaceName,
            methods: [
                Method("Activate", in: [("platform-data", .dictionary(key: .string, value: .variant))]) { _ in
                    logger.debug("activated by the desktop")
                    return []
                },
                Method("Open", in: [("uris", .array(.string)), ("platform-data", .dictionary(key: .string, value: .variant))]) { call in
                    let uris: [String] = try call.argument(0)
                    guard !uris.isEmpty else { throw BusError.invalidArgs("Open needs at least one file or folder") }
                    try await books.value.openForClient(uris)
                    return []
                },
                Method("ActivateAction", in: [("action-name", .string), ("parameter", .array(.variant)),
                                              ("platform-data", .dictionary(key: .string, value: .variant))]) { call in
                    throw BusError.notSupported("Lectern has no action named \(try call.argument(0, as: String.self))")
                },
            ])
    }
}
