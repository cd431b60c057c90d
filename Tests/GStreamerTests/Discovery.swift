import Foundation
import GStreamer
import TestSupport

/// `Discoverer.discover(url)` on a thread of its own (``offThePool``): it blocks while GStreamer reads the file, and
/// the test process's other suites need the two threads of the cooperative pool meanwhile.
func discoverOffThePool(_ url: URL) async throws -> MediaInfo {
    try await offThePool { try Discoverer.discover(url) }
}
