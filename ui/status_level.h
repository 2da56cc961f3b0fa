// How much a view's status line matters, said by the view that emits it: routine progress goes
// to the status bar, a warning or an error to a notification the user sees.
#pragma once

namespace hearth::ui {

enum class StatusLevel { Info, Warning, Error };

} // namespace hearth::ui
