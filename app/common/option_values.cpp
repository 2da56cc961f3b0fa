// Byte sizes as the command lines take them ("512M", "1.5GiB").
#include "option_values.h"

#include <cctype>
#include <cmath>

namespace hearth::options {

bool parseByteSize(std::string_view text, uint64_t& bytes) {
    size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == 0) return false;
    double v = 0.0;
    if (!parseReal(text.substr(0, i), v)) return false;
    std::string unit(text.substr(i));
    for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (unit.size() >= 3 && unit.compare(unit.size() - 2, 2, "IB") == 0) unit.resize(unit.size() - 2);
    else if (unit.size() >= 2 && unit.back() == 'B') unit.pop_back();
    double scale = 1.0;
    if (unit.empty() || unit == "B") scale = 1.0;
    else if (unit == "K") scale = 1024.0;
    else if (unit == "M") scale = 1024.0 * 1024.0;
    else if (unit == "G") scale = 1024.0 * 1024.0 * 1024.0;
    else if (unit == "T") scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
    else return false;
    const double b = v * scale;
    if (!std::isfinite(b) || b < 1.0 || b > 1e15) return false;
    bytes = uint64_t(b);
    return true;
}

} // namespace hearth::options
