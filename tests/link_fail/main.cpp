// The host's main: both translation units agree on the key (0 when they do).
#include <string>

std::string user_a();
std::string user_b();

int main() { return user_a().substr(1) == user_b().substr(1) ? 0 : 1; }
