/**
 * LLM-as-judge prompts and reply parsing, verbatim from the references:
 *
 * - `deepeyes/v1`: Visual-Agent/DeepEyes@6c5e7967 `verl/utils/reward_score/vl_agent.py` (Apache-2.0):
 *   `get_chat_template()` + 7 in-context examples + the test block; system "You are a helpful assistant.",
 *   temperature 0.3.
 * - `pyvision-rl/v1`: agents-x-project/PyVision-RL@62ca599d
 *   `verl_agents/verl/utils/reward_score/multi_task_verifier.py` (MIT): the same template with per-source
 *   examples (visual search = DeepEyes' 7, chart 6, math 10, vsi 6, longvila 9), temperature 0.3; data
 *   sources it does not map crash there (`UnboundLocalError`), and are refused here.
 *
 * - `deepeyes-eval/v1`: DeepEyes `eval/judge_result.py` (V* accuracy): the standard answer gets an `A. `
 *   prefix, rules first (a one-letter answer is right iff it is `A`; a two-character answer with a `.` iff
 *   it holds `A`; right when the prefixed answer is a substring), then the judge with its own 7 examples
 *   (options written `A. …`), temperature 0.0.
 *
 * Reply parsing is shared: the reply is stripped; if it contains `Judgement:`, a `1` anywhere after the
 * last one wins; otherwise the reply must be exactly `1`.
 */
import { pyStrip } from '../../pycompat/str';

export const JUDGE_SYSTEM_PROMPT = 'You are a helpful assistant.';
export const JUDGE_TEMPERATURE = 0.3;

const CHAT_TEMPLATE = `
Below are two answers to a question. Question is [Question], [Standard Answer] is the standard answer to the question, and [Model_answer] is the answer extracted from a model's output to this question.  Determine whether these two answers are consistent.
Note that [Model Answer] is consistent with [Standard Answer] whenever they are essentially the same. If the meaning is expressed in the same way, it is considered consistent, for example, 'pink' and 'it is pink'.
If they are consistent, Judement is 1; if they are different, Judement is 0. Just output Judement and don't output anything else.


`;

/** One in-context example in the references' layout (`:` after `[Model_answer]` with or without a space). */
function ex(q: string, gt: string, pred: string, j: 0 | 1, spaced = true): string {
  return `\n[Question]: ${q}\n[Standard Answer]: ${gt}\n[Model_answer]${spaced ? ' :' : ':'} ${pred}\nJudgement: ${j}\n`;
}

const ICE_VISUAL_SEARCH = [
  ex('Is the countertop tan or blue?', 'The countertop is tan.', 'tan', 1),
  ex('On which side of the picture is the barrier?', 'The barrier is on the left side of the picture.', 'left', 1),
  ex('Is the kite brown and large?', 'Yes, the kite is brown and large.', 'Yes', 1),
  ex('Are the spots on a giraffe?', 'No, the spots are on a banana.', 'no', 1),
  ex('Who is wearing pants?', 'The boy is wearing pants.', 'The person in the picture is wearing pants.', 1),
  ex('Is the man phone both blue and closed?', 'Yes, the man phone is both blue and closed.', 'No.', 0),
  ex('What color is the towel in the center of the picture?', 'The towel in the center of the picture is blue.', 'The towel in the center of the picture is pink.', 0),
];

/** DeepEyes `eval/judge_result.py` examples: the standard answers carry the `A. ` option prefix. */
const ICE_DEEPEYES_EVAL = [
  ex('Is the countertop tan or blue?', 'A. The countertop is tan.', 'tan', 1),
  ex('On which side of the picture is the barrier?', 'A. The barrier is on the left side of the picture.', 'A', 1),
  ex('Is the kite brown and large?', 'A. Yes, the kite is brown and large.', 'Yes', 1),
  ex('Are the spots on a giraffe?', 'A. No, the spots are on a banana.', 'no', 1),
  ex('Who is wearing pants?', 'A. The boy is wearing pants.', 'C. The girl in the picture is wearing pants.', 0),
  ex('Is the man phone both blue and closed?', 'A. Yes, the man phone is both blue and closed.', 'No.', 0),
  ex('What color is the towel in the center of the picture?', 'A. The towel in the center of the picture is blue.', 'The towel in the center of the picture is pink.', 0),
];

const ICE_MATH = [
  ex("The histogram below shows the distribution of Mike's 8 shots. What is Mike's average score ( )?", '8', '8', 1, false),
  ex('A factory produces products. A product is randomly selected, and the random variable X is defined as follows: X=1 indicates the product is qualified, X=0 indicates the product is unqualified. The probability that a product is qualified is 0.7. What is the probability that both of two randomly selected products are qualified?', '0.49', '0.7 × 0.7 = 0.49', 1, false),
  ex('From a box containing 10 balls, 3 red and 7 blue, balls are drawn with replacement. Let S₄ be the total number of red balls drawn in 4 draws. Find P(S₄ ≥ 2).', '0.348', '0.348', 1, false),
  ex('The lifetime X (in hours) of a component follows an exponential distribution with parameter λ=0.3. Find P(X>10).', '0.05', '0.394', 0, false),
  ex('The random variable X has a probability density function as shown in the figure. What should the coefficient k be?', '3/8', '0.375', 1, false),
  ex('As shown in the figure, the curve is the probability density function of a normal distribution. Calculate the variance.', '100', '50', 0, false),
  ex('As shown in the figure, the bar chart represents the probability distribution of a discrete random variable X. Calculate the standard deviation.', '1.4', '1.4', 1, false),
  ex('Given that X ~ N(80, 4²), what is P(X < 76)?', '0.1587', '0.84', 0, false),
  ex('The lifetime X of a component follows an exponential distribution with parameter λ=0.1. Calculate the probability that the lifetime exceeds 10 hours, P(X>10).', '0.394', '0.394', 1, false),
  ex('The bar chart shows the distribution of scores from Mike’s 8 attempts. What is the mean score?', '8.125', '8.12', 1, false),
];

const ICE_CHART = [
  ex('What is the title of the chart?', "The title of the chart is 'Comparison of Literacy Rates by Country'.", 'Comparison of Literacy Rates by Country', 1, false),
  ex('How many subplots are present in the figure?', 'There are 4 subplots in the figure.', 'Four subplots.', 1, false),
  ex('What is the color used for the background of the overall chart?', 'The color used for the background of the overall chart is off-white.', 'white', 0, false),
  ex("What is the percentage increase in the number of 'Prototypes Developed' compared to 'Ideas Proposed'?", "The values for 'Prototypes Developed' and 'Ideas Proposed' are 800 and 500 respectively. The percentage increase is [(800 - 500) / 500] * 100 = 60%. Answer: 60%.", '60%', 1, false),
  ex('Which metric has the smallest value across all quartiles, and what is the corresponding quartile and value?', "The smallest value is 65.0, corresponding to the metric 'Skewness' and quartile 'Q1'. Answer: Skewness, Q1, 65.0", 'Q1 of Skewness, value 65.0', 1, false),
  ex("What is the percentage difference between 'Digital Media' and 'Broadcast Journalism' funding allocations?", "The allocation for 'Digital Media' is 30.0% and for 'Broadcast Journalism' is 18.0%. The percentage difference is 12.0%.", '18%', 0, false),
];

const ICE_VSI = [
  ex('If I am standing by the book and facing the box, is the suitcase to the left or the right of the box?\nA. left\nB. right', 'B', 'B', 1),
  ex('If I am standing by the whiteboard and facing the doorframe, is the cabinets to the left or the right of the doorframe?\nA. right\nB. left', 'A', 'right', 1),
  ex('If I am standing by the refrigerator and facing the coffee kettle, is the cabinet to my left, right, or back?\nAn object is to my back if I would have to turn at least 135 degrees in order to face it.\nA. left\nB. back\nC. right', 'C', 'C', 1),
  ex('What will be the first-time appearance order of the following categories in the video: radiator, shelf, shower curtain rod, soap dispenser?\nA. soap dispenser, radiator, shelf, shower curtain rod\nB. soap dispenser, shelf, radiator, shower curtain rod\nC. radiator, soap dispenser, shelf, shower curtain rod\nD. radiator, shelf, shower curtain rod, soap dispenser', 'C', 'C', 1),
  ex('How many cabinet(s) are in this room?', '2', '2', 1),
  ex('If I am standing by the desk and facing the door, is the keyboard to the left or the right of the door?\nA. right\nB. left', 'A', 'left', 0),
];

/** The longvila examples end their option lines in two spaces in places; kept byte for byte. */
const ICE_LONGVILA = [
  ex('What is the primary goal of the video creator, based on the sequence of actions and contextual clues across all timestamps?\nA. Demonstrate the steps to thoroughly clean a dusty computer tower\nB. Promote a specific branded computer fan product for RGB customization\nC. Educate viewers on general computer hardware assembly principles\nD. Showcase a custom-built computer setup for gaming or professional use', 'B', 'Educate viewers on general computer hardware assembly principles', 0, false),
  ex("What is the woman's most likely overarching intention throughout the video, based on the progression of scenes and contextual clues?  \nA. Promoting a commercial baby product brand through demonstrations  \nB. Sharing parenting tips for toddlers through casual storytelling  \nC. Documenting her pregnancy journey for a personal blog audience  \nD. Advertising home organization strategies using her living space  ", 'C', 'A. Promoting a commercial baby product brand through demonstrations', 0, false),
  ex("Based on the video, what is the most likely primary intention of the driver (man in glasses and gray t-shirt) interacting with multiple Mazda MX-5 vehicles in different contexts?  \nA. He is a car reviewer test-driving different trims of the same model.  \nB. He is evaluating a specific used car's condition to purchase it.  \nC. He is commuting to work using different cars he owns.  \nD. He is practicing parallel parking in various locations.  ", 'B', 'A. He is a car reviewer test-driving different trims of the same model.', 0, false),
  ex('What is the creators\' primary intention behind including the scenes featuring the Tomcat mouse trap (0:00:20-0:00:30) and the "Horn" product (0:02:50-0:03:00 and 0:03:10-0:03:20) in the video?  \nA. To demonstrate the proper use of common garage tools like drills and pliers  \nB. To highlight a repair process for a malfunctioning wooden box labeled "Top Secret"  \nC. To contrast commercial pest control products with homemade workshop solutions  \nD. To promote a DIY project tutorial available on "THEKINGOFRANDOM.COM"  ', 'D', 'C. To contrast commercial pest control products with homemade workshop solutions', 0, false),
  ex('Based on the video, which overarching goal is Albus Dumbledore most likely pursuing across the depicted scenes in "Harry Potter and the Goblet of Fire" and later films?  \nA. To publicly expose Lord Voldemort\'s return using the Triwizard Tournament  \nB. To manipulate the Golden Snitch to ensure Harry’s survival via the Resurrection Stone  \nC. To prevent the Goblet of Fire from being corrupted by Death Eaters  \nD. To restore Hogwarts’ safety after the events of the Second Wizarding War  ', 'B', 'To restore Hogwarts’ safety after the events of the Second Wizarding War', 0, false),
  ex('What was the creator’s primary intention in structuring the video to include roller coasters from Schwarzkopf Industries, Gerstlauer Amusement Rides, and others, alongside diverse elements like castles, dinosaurs, and varying track colors?  \nA. To chronologically document the historical development of roller coasters.  \nB. To critique the safety standards of different amusement park manufacturers.  \nC. To highlight how thematic storytelling and engineering diversity enhance rider experiences.  \nD. Safety critiques (B) and historical documentation (A) are never implied; focus is on experiential diversity (C).', 'C', 'D', 0, false),
  ex('What is the primary intention behind the man in the green shirt’s activities across the video segments, based on contextual clues and recurring themes?  \nA. Promoting a local stationery business (Karachi Stationery Mart)  \nB. Documenting a personal travel experience for a YouTube series  \nC. Conducting academic research on urban infrastructure in Delhi  \nD. Advocating for affordable street food pricing (e.g., Rs.20/Rs.70 signs)  ', 'B', 'D. Advocating for affordable street food pricing (e.g., Rs.20/Rs.70 signs)', 0, false),
  ex("What is the man's primary motivation for opposing Phaserbeam Computers, as inferred from the interconnected scenes and dialogue?  \nA. To gain personal fame as a technological innovator surpassing Phaserbeam.  \nB. To protect his family from threats indirectly linked to Phaserbeam's influence.  \nC. However, the revolution is likely a *means* to protect his family, not an end goal. The familial emphasis (0:00:30–0:00:40) anchors his actions in personal rather than purely ideological motives.  \nD. To resolve a professional rivalry stemming from workplace competition.  ", 'B', 'C. However, the revolution is likely a *means* to protect his family, not an end goal. The familial emphasis (0:00:30–0:00:40) anchors his actions in personal rather than purely ideological motives.', 0, false),
  ex('What is the primary intention behind the man in the green shirt’s activities across the video segments, based on contextual clues and recurring themes?  \nA. Promoting a local stationery business (Karachi Stationery Mart)  \nB. Documenting a personal travel experience for a YouTube series  \nC. Conducting academic research on urban infrastructure in Delhi  \nD. Advocating for affordable street food pricing (e.g., Rs.20/Rs.70 signs)  ', 'B', 'B', 1, false),
];

const PVRL_SOURCES: Record<string, readonly string[]> = {
  deepeyes: ICE_VISUAL_SEARCH,
  minio3: ICE_VISUAL_SEARCH,
  vstar: ICE_VISUAL_SEARCH,
  'hrbench-4k': ICE_VISUAL_SEARCH,
  'hrbench-8k': ICE_VISUAL_SEARCH,
  ecd: ICE_CHART,
  'wemath-standard': ICE_MATH,
  'wemath-pro': ICE_MATH,
  'v-interaction': ICE_MATH,
  mathvision: ICE_MATH,
  wemath: ICE_MATH,
  mathvista: ICE_MATH,
  mathverse: ICE_MATH,
  logicvista: ICE_MATH,
  vsi: ICE_VSI,
  longvila: ICE_LONGVILA,
};

/** Data sources the PyVision-RL judge prompt maps (others crash in the reference). */
export const PVRL_JUDGE_SOURCES: readonly string[] = Object.keys(PVRL_SOURCES);

export type JudgePromptVersion = 'deepeyes/v1' | 'deepeyes-eval/v1' | 'pyvision-rl/v1';
export const JUDGE_PROMPT_VERSIONS: readonly JudgePromptVersion[] = ['deepeyes/v1', 'deepeyes-eval/v1', 'pyvision-rl/v1'];
/** The sampling temperature each reference calls its judge with. */
export const JUDGE_TEMPERATURES: Readonly<Record<JudgePromptVersion, number>> = { 'deepeyes/v1': 0.3, 'deepeyes-eval/v1': 0.0, 'pyvision-rl/v1': 0.3 };

/** Raised for a data source the PyVision-RL prompt has no examples for (the reference's UnboundLocalError). */
export class JudgeSourceError extends Error {
  readonly pyType = 'UnboundLocalError';
}

function assemble(examples: readonly string[], question: string, groundTruth: string, prediction: string): string {
  let demo = CHAT_TEMPLATE;
  for (const e of examples) demo += `${e}\n\n`;
  return `${demo}\n[Question]: ${question}\n[Standard Answer]: ${groundTruth}\n[Model_answer] : ${prediction}\nJudgement:`;
}

/** DeepEyes `get_prompt(predict_str, ground_truth, question)`. */
export function deepEyesJudgePrompt(prediction: string, groundTruth: string, question: string): string {
  return assemble(ICE_VISUAL_SEARCH, question, groundTruth, prediction);
}

/** PyVision-RL `get_prompt(predict_str, ground_truth, question, data_source)`. */
export function pyvisionJudgePrompt(prediction: string, groundTruth: string, question: string, dataSource: string): string {
  const examples = PVRL_SOURCES[dataSource];
  if (!examples) {
    throw new JudgeSourceError(
      `the PyVision-RL judge prompt has no examples for data source "${dataSource}" (known: ${PVRL_JUDGE_SOURCES.join(', ')})`,
    );
  }
  return assemble(examples, question, groundTruth, prediction);
}

/** DeepEyes eval `get_prompt(pred_ans, 'A. ' + answer, question)` (the caller adds the prefix). */
export function deepEyesEvalJudgePrompt(prediction: string, groundTruth: string, question: string): string {
  return assemble(ICE_DEEPEYES_EVAL, question, groundTruth, prediction);
}

export function judgePrompt(version: JudgePromptVersion, prediction: string, groundTruth: string, question: string, dataSource = 'deepeyes'): string {
  if (version === 'deepeyes/v1') return deepEyesJudgePrompt(prediction, groundTruth, question);
  if (version === 'deepeyes-eval/v1') return deepEyesEvalJudgePrompt(prediction, groundTruth, question);
  return pyvisionJudgePrompt(prediction, groundTruth, question, dataSource);
}

/**
 * The references' reply parsing: `{acc, verdict}` where `verdict` is '1', '0' or 'unparsed' (the
 * reference prints a warning and scores 0).
 */
export function parseJudgeReply(reply: string): { acc: 0 | 1; verdict: '1' | '0' | 'unparsed' } {
  let r = pyStrip(reply);
  if (r.includes('Judgement:')) {
    r = pyStrip(r.split('Judgement:').at(-1)!);
    if (r.includes('1')) return { acc: 1, verdict: '1' };
    if (r.includes('0')) return { acc: 0, verdict: '0' };
    return { acc: 0, verdict: 'unparsed' };
  }
  if (r === '1') return { acc: 1, verdict: '1' };
  if (r === '0') return { acc: 0, verdict: '0' };
  return { acc: 0, verdict: 'unparsed' };
}
