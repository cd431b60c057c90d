// libdbus-1, imported whole; the Swift layer in Sources/DBus wraps it.
#include <dbus/dbus.h>
