import CUPnP
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A media renderer on the network (a UPnP MediaRenderer: a network speaker, an AV receiver, a TV, Rygel).
public struct Renderer: Sendable, Hashable {
    /// Its unique device name (`uuid:…`): the same renderer across restarts and addresses.
    public let udn: String
    /// The name its owner gave it.
    public let name: String
    /// The URL of its device description.
    public let location: String
    /// The network interface it was found on, and this machine's address there.
    public let interface: String
    public let host: String
}

/// Why the network's UPnP could not start.
public struct UPnPError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// The media renderers on the network, found by SSDP and followed as they come and go, on GUPnP's thread
/// (Sources/CUPnP). `renderers` is the list now; `changes` says when it changed.
///
/// ```swift
/// let browser = try RendererBrowser(interface: nil)
/// for await _ in browser.changes { print(browser.renderers.map(\.name)) }
/// ```
public final class RendererBrowser: Sendable {
    /// Each time the list changed (a renderer came or went).
    public let changes: AsyncStream<Void>
    private let found: Found
    private let handle: Mutex<OpaquePointer?>

    /// Starts looking on `interface` (nil: every interface GUPnP's network monitor offers, loopback too).
    public init(interface: String?) throws(UPnPError) {
        let (changes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.changes = changes
        found = Found(continuation: continuation)
        let user = Unmanaged.passUnretained(found).toOpaque()
        var error: UnsafeMutablePointer<CChar>?
        guard let started = lectern_upnp_start(interface, { user, available, udn, name, location, interface, host in
            guard let user else { return }
            let found = Unmanaged<Found>.fromOpaque(user).takeUnretainedValue()
            found.note(available: available, Renderer(udn: String(cString: udn), name: String(cString: name),
                                                      location: String(cString: location),
                                                      interface: String(cString: interface), host: String(cString: host)))
        }, user, &error) else {
            defer { free(error) }
            throw UPnPError(description: error.map { String(cString: $0) } ?? "UPnP did not start")
        }
        handle = Mutex<OpaquePointer?>(started)
    }

    /// The renderers present, by name (then by UDN).
    public var renderers: [Renderer] {
        found.present.withLock { $0.values.sorted { ($0.name, $0.udn) < ($1.name, $1.udn) } }
    }

    /// Stops looking; the list stays as it was, and `changes` ends.
    public func stop() {
        guard let upnp = handle.withLock({ handle in defer { handle = nil }; return handle }) else { return }
        lectern_upnp_stop(upnp)
        found.continuation.finish()
    }

    deinit { stop() }

    /// What GUPnP's thread tells, kept for any thread to read.
    private final class Found: Sendable {
        let present = Mutex<[String: Renderer]>([:])
        let continuation: AsyncStream<Void>.Continuation

        init(continuation: AsyncStream<Void>.Continuation) { self.continuation = continuation }

        func note(available: Bool, _ renderer: Renderer) {
            let changed = present.withLock { present in
                if available {
                    guard present[renderer.udn] != renderer else { return false }
                    present[renderer.udn] = renderer
                } else {
                    guard present.removeValue(forKey: renderer.udn) != nil else { return false }
                }
                return true
            }
            if changed { continuation.yield() }
        }
    }
}
